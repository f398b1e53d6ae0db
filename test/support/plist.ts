/**
 * A strict reader of XML property lists, for testing the launchd agent where `plutil` is absent: it
 * checks what a plist must be as XML (declaration, the Apple DOCTYPE, every element closed and nested,
 * comments without "--", only the five predefined entities, no stray markup in text) and as a plist (only
 * plist elements, keys and values alternating in a dict, no duplicate key), and returns the value.
 */

/** A plist value. */
export type PlistValue = string | number | boolean | PlistValue[] | { [key: string]: PlistValue };

/** Parses `text` as an XML plist; throws naming the first defect and where it is. */
export function parsePlist(text: string): PlistValue {
  let at = 0;
  const fail = (why: string): never => {
    const line = text.slice(0, at).split("\n").length;
    throw new Error(`not a well-formed plist at line ${line}: ${why}`);
  };
  const skipMisc = () => {
    for (;;) {
      const ws = /^\s*/.exec(text.slice(at))![0];
      at += ws.length;
      if (!text.startsWith("<!--", at)) return;
      const end = text.indexOf("-->", at + 4);
      if (end < 0) fail("a comment is not closed");
      if (text.slice(at + 4, end).includes("--")) fail('"--" inside a comment');
      at = end + 3;
    }
  };
  const decode = (raw: string): string => {
    if (/[<>]/.test(raw)) fail(`markup in text: ${JSON.stringify(raw.slice(0, 40))}`);
    return raw.replace(/&[^;]*;?/g, (entity) => {
      const known: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'" };
      if (entity in known) return known[entity];
      const num = /^&#(x[0-9a-fA-F]+|[0-9]+);$/.exec(entity);
      if (num) return String.fromCodePoint(num[1][0] === "x" ? parseInt(num[1].slice(1), 16) : Number(num[1]));
      return fail(`unknown entity ${entity}`);
    });
  };
  /** The next tag: its name, and whether it is a close tag or self-closing. */
  const tag = (): { name: string; close: boolean; empty: boolean; attrs: string } => {
    skipMisc();
    const m = /^<(\/?)([A-Za-z][\w.-]*)((?:\s+[\w:.-]+\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/.exec(text.slice(at));
    if (!m) fail(`expected a tag, found ${JSON.stringify(text.slice(at, at + 30))}`);
    at += m![0].length;
    return { name: m![2], close: m![1] === "/", empty: m![4] === "/", attrs: m![3] };
  };
  const textUntilClose = (name: string): string => {
    const end = text.indexOf(`</${name}>`, at);
    if (end < 0) fail(`<${name}> is not closed`);
    const raw = text.slice(at, end);
    at = end + name.length + 3;
    return decode(raw);
  };
  const value = (open: { name: string; close: boolean; empty: boolean }): PlistValue => {
    if (open.close) fail(`unexpected </${open.name}>`);
    switch (open.name) {
      case "true":
      case "false":
        if (!open.empty) fail(`<${open.name}> must be empty: <${open.name}/>`);
        return open.name === "true";
      case "string":
        return open.empty ? "" : textUntilClose("string");
      case "integer": {
        const raw = open.empty ? "" : textUntilClose("integer").trim();
        if (!/^[+-]?\d+$/.test(raw)) fail(`<integer> holds ${JSON.stringify(raw)}`);
        return Number(raw);
      }
      case "real": {
        const raw = open.empty ? "" : textUntilClose("real").trim();
        if (!Number.isFinite(Number(raw)) || raw === "") fail(`<real> holds ${JSON.stringify(raw)}`);
        return Number(raw);
      }
      case "date":
      case "data":
        return open.empty ? "" : textUntilClose(open.name).trim();
      case "array": {
        const out: PlistValue[] = [];
        if (open.empty) return out;
        for (;;) {
          const next = tag();
          if (next.close && next.name === "array") return out;
          out.push(value(next));
        }
      }
      case "dict": {
        const out: { [key: string]: PlistValue } = {};
        if (open.empty) return out;
        for (;;) {
          const next = tag();
          if (next.close && next.name === "dict") return out;
          if (next.name !== "key" || next.close || next.empty) fail(`expected <key> in a dict, found <${next.close ? "/" : ""}${next.name}>`);
          const key = textUntilClose("key");
          if (key in out) fail(`duplicate key ${key}`);
          const item = tag();
          if (item.close) fail(`key ${key} has no value`);
          out[key] = value(item);
        }
      }
      default:
        return fail(`<${open.name}> is not a plist element`);
    }
  };

  if (!/^<\?xml version="1\.0"( encoding="UTF-8")?\?>/.test(text)) fail('it must start with <?xml version="1.0" encoding="UTF-8"?>');
  at = text.indexOf("?>") + 2;
  skipMisc();
  const doctype = '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">';
  if (!text.startsWith(doctype, at)) fail("the Apple plist DOCTYPE must follow the declaration");
  at += doctype.length;
  const root = tag();
  if (root.name !== "plist" || root.close || root.empty || !/version="1\.0"/.test(root.attrs)) fail('the root element must be <plist version="1.0">');
  const result = value(tag());
  const close = tag();
  if (!close.close || close.name !== "plist") fail("<plist> holds more than one value");
  skipMisc();
  if (at !== text.length) fail("content after </plist>");
  return result;
}
