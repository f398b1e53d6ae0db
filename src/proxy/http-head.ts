/**
 * HTTP/1.1 request heads (RFC 9112 §3, §5): the request line and header fields, read strictly — a line
 * folded over two, a name that is not a token, a control character in a value are refused, never
 * guessed at — and the CONNECT target's `host:port` (RFC 9110 §9.3.6). Pure.
 */

/** A parsed request head. */
export interface RequestHead {
  method: string;
  target: string;
  /** "1.0" or "1.1". */
  version: string;
  /** Field names lower case, in order, repeats kept. */
  fields: [string, string][];
}

const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([^\s]+) HTTP\/(1\.[01])$/;
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Field values: visible characters, spaces, tabs and obs-text (RFC 9110 §5.5); nothing else. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Parses a head (Latin-1 text ending with its blank line); a phrase saying what is wrong with it otherwise. */
export function parseRequestHead(text: string): RequestHead | string {
  const lines = text.replace(/\r\n\r\n$/, "").split("\r\n");
  const m = REQUEST_LINE.exec(lines[0]);
  if (m === null) return "the request line is not METHOD TARGET HTTP/1.x";
  const fields: [string, string][] = [];
  for (const line of lines.slice(1)) {
    if (/^[ \t]/.test(line)) return "a header field is folded over two lines";
    const colon = line.indexOf(":");
    const name = colon < 0 ? "" : line.slice(0, colon);
    if (!FIELD_NAME.test(name)) return "a header line is not NAME: VALUE";
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
    if (!FIELD_VALUE.test(value)) return "a header value holds a control character";
    fields.push([name.toLowerCase(), value]);
  }
  return { method: m[1], target: m[2], version: m[3], fields };
}

/** The one value of field `name`, its repeats joined with ", " (RFC 9110 §5.3); null when absent. */
export function field(head: RequestHead, name: string): string | null {
  const values = head.fields.filter(([n]) => n === name).map(([, v]) => v);
  return values.length === 0 ? null : values.join(", ");
}

/** True when the connection stays open after this exchange (RFC 9112 §9.3). */
export function keepsAlive(head: RequestHead): boolean {
  const tokens = (field(head, "connection") ?? "").toLowerCase().split(",").map((t) => t.trim());
  return head.version === "1.1" ? !tokens.includes("close") : tokens.includes("keep-alive");
}

const HOST_LABELS = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/** A CONNECT target `host:port` (a name, an IPv4 address or a bracketed IPv6 one); null when it is not one. */
export function parseAuthority(target: string): { host: string; port: number } | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+):(\d{1,5})$/.exec(target);
  if (m === null) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  const raw = m[1].toLowerCase();
  if (raw.startsWith("[")) {
    const inner = raw.slice(1, -1);
    return inner.includes(":") && URL.canParse(`http://${raw}/`) ? { host: inner, port } : null;
  }
  return HOST_LABELS.test(raw) || IPV4.test(raw) ? { host: raw, port } : null;
}
