// JSON text of a record or a tool input for readers, safe at any depth: `JSON.stringify(x, null, 2)` of a tool input nested 20,000 levels
// deep wrote 800 MB of indentation or overflowed the stack (docs/RELIABILITY.md "Trust boundaries"). Pure.

/** Levels indented like `JSON.stringify(x, null, 2)`; anything deeper is written compactly. */
export const INDENT_LEVELS = 12;

interface Frame {
  keys: string[] | null;
  values: unknown[];
  next: number;
}

/** What JSON leaves out of an object (and writes as null in an array). */
const omitted = (v: unknown) => v === undefined || typeof v === "function" || typeof v === "symbol";
const scalar = (v: unknown) => (typeof v === "string" ? JSON.stringify(v) : typeof v === "number" ? (Number.isFinite(v) ? String(v) : "null") : String(v));

/** Indented two spaces for the first `levels` levels (the text `JSON.stringify(value, null, 2)` writes for a shallower value), compact below. */
export function jsonText(value: unknown, levels = INDENT_LEVELS): string {
  return indentJson(compactJson(value), levels);
}

/** Indents compact JSON text for its first `levels` levels (one pass; strings are copied untouched). */
function indentJson(compact: string, levels: number): string {
  if (levels <= 0) return compact;
  const pads = Array.from({ length: levels + 1 }, (_, d) => "\n" + "  ".repeat(d));
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < compact.length; i++) {
    const c = compact.charCodeAt(i);
    if (c === 34) {
      // A string: skip to its closing quote (a backslash escapes the next character).
      for (i++; i < compact.length && compact.charCodeAt(i) !== 34; i++) if (compact.charCodeAt(i) === 92) i++;
    } else if (c === 123 || c === 91) {
      const next = compact.charCodeAt(i + 1);
      if (next === 125 || next === 93) i++; // an empty container stays "{}" / "[]"
      else if (++depth <= levels) {
        out.push(compact.slice(start, i + 1), pads[depth]);
        start = i + 1;
      }
    } else if (c === 125 || c === 93) {
      if (depth <= levels) {
        out.push(compact.slice(start, i), pads[depth - 1]);
        start = i;
      }
      depth--;
    } else if (depth <= levels && (c === 44 || c === 58)) {
      out.push(compact.slice(start, i + 1), c === 44 ? pads[depth] : " ");
      start = i + 1;
    }
  }
  out.push(compact.slice(start));
  return out.join("");
}

/** The compact text of `value` without recursion: what JSON.stringify writes, at any depth. */
function walkJson(value: unknown): string {
  const out: string[] = [];
  const stack: Frame[] = [];
  const open = (v: unknown): void => {
    if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") v = (v as { toJSON(): unknown }).toJSON();
    if (Array.isArray(v)) {
      out.push("[");
      stack.push({ keys: null, values: v, next: 0 });
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v).filter((k) => !omitted((v as Record<string, unknown>)[k]));
      out.push("{");
      stack.push({ keys, values: keys.map((k) => (v as Record<string, unknown>)[k]), next: 0 });
    } else {
      out.push(omitted(v) ? "null" : scalar(v));
    }
  };
  open(value);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    if (frame.next === frame.values.length) {
      stack.pop();
      out.push(frame.keys === null ? "]" : "}");
      continue;
    }
    const i = frame.next++;
    if (i > 0) out.push(",");
    if (frame.keys !== null) out.push(JSON.stringify(frame.keys[i]) + ":");
    open(frame.values[i]);
  }
  return out.join("");
}

/** Compact JSON of a value read from JSON: `JSON.stringify` where the runtime can, else the same text without its recursion limit. */
export function compactJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return walkJson(value);
  }
}
