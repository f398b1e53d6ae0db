/**
 * JSON text of a record or a tool input for readers, safe at any depth: a record is whatever a request
 * carried, and a tool input nested 20,000 levels deep made `JSON.stringify(x, null, 2)` write 800 MB of
 * indentation (quadratic in the depth) or overflow the stack. Here the value is walked with an explicit
 * stack, so no depth can overflow, and indented only for its first levels, so the text stays within a
 * small factor of the compact form (docs/RELIABILITY.md "Trust boundaries"). Pure.
 */

/** Levels indented like `JSON.stringify(x, null, 2)`; anything deeper is written compactly. */
export const INDENT_LEVELS = 12;

/** A container being written: its values (and keys, for an object), and how far it got. */
interface Frame {
  keys: string[] | null;
  values: unknown[];
  next: number;
  depth: number;
}

/** True for what JSON leaves out of an object (and writes as null in an array). */
function omitted(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

/** A scalar's JSON text (a string, number, boolean or null). */
function scalar(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : typeof value === "number" ? (Number.isFinite(value) ? String(value) : "null") : String(value);
}

/**
 * `value` as JSON text: indented two spaces per level for the first `levels` levels (0: compact, as
 * `JSON.stringify(value)` writes it), compact below. Never recurses; the same value a JSON.parse gave.
 */
export function jsonText(value: unknown, levels = INDENT_LEVELS): string {
  const out: string[] = [];
  const stack: Frame[] = [];
  const open = (v: unknown, depth: number): void => {
    if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") v = (v as { toJSON(): unknown }).toJSON();
    if (Array.isArray(v)) {
      out.push("[");
      stack.push({ keys: null, values: v, next: 0, depth });
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v).filter((k) => !omitted((v as Record<string, unknown>)[k]));
      out.push("{");
      stack.push({ keys, values: keys.map((k) => (v as Record<string, unknown>)[k]), next: 0, depth });
    } else {
      out.push(omitted(v) ? "null" : scalar(v));
    }
  };
  open(value, 0);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    const indent = frame.depth < levels;
    const pad = (depth: number) => (indent ? "\n" + "  ".repeat(depth) : "");
    if (frame.next === frame.values.length) {
      stack.pop();
      out.push((frame.values.length > 0 ? pad(frame.depth) : "") + (frame.keys === null ? "]" : "}"));
      continue;
    }
    const i = frame.next++;
    out.push((i > 0 ? "," : "") + pad(frame.depth + 1));
    if (frame.keys !== null) out.push(JSON.stringify(frame.keys[i]) + (indent ? ": " : ":"));
    open(frame.values[i], frame.depth + 1);
  }
  return out.join("");
}

/** Compact JSON of a value read from JSON: `JSON.stringify` where the runtime can, else the same text without its recursion limit. */
export function compactJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return jsonText(value, 0);
  }
}
