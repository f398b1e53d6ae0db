/**
 * Finding where JSON values begin and end in UTF-8 bytes without parsing them, so a request body's
 * messages can be located and only the new ones parsed (docs/DESIGN.md "Request side"). Pure. The
 * scanner trusts nothing: malformed input yields null, never a throw or an index past the end.
 * Strings are skipped quote to quote with the native `indexOf`, so the cost is in the structure, not
 * in the text a conversation mostly is.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** A byte range `[start, end)`. */
export type Span = readonly [start: number, end: number];

/** True for JSON whitespace. */
function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** The first non-whitespace index at or after `i`. */
export function skipSpace(bytes: Uint8Array, i: number): number {
  while (i < bytes.length && isSpace(bytes[i])) i++;
  return i;
}

/** The index just past the string whose opening quote is at `i`, or -1 when it never closes. */
export function skipString(bytes: Uint8Array, i: number): number {
  let at = i + 1;
  for (;;) {
    const q = bytes.indexOf(QUOTE, at);
    if (q < 0) return -1;
    let slashes = 0;
    for (let j = q - 1; j > i && bytes[j] === BACKSLASH; j--) slashes++;
    if (slashes % 2 === 0) return q + 1;
    at = q + 1;
  }
}

/**
 * The index just past the value that starts at `i` (whitespace before it skipped), or -1 when the bytes
 * are not a complete value there.
 * @example
 * const b = new TextEncoder().encode(' {"a":[1,"]"]} ,');
 * skipValue(b, 0); // 14: just past the closing brace
 */
export function skipValue(bytes: Uint8Array, i: number): number {
  i = skipSpace(bytes, i);
  if (i >= bytes.length) return -1;
  const first = bytes[i];
  if (first === QUOTE) return skipString(bytes, i);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    // A number, true, false or null: up to the next delimiter.
    let j = i;
    while (j < bytes.length && !isSpace(bytes[j]) && bytes[j] !== COMMA && bytes[j] !== CLOSE_BRACE && bytes[j] !== CLOSE_BRACKET && bytes[j] !== COLON) j++;
    return j === i ? -1 : j;
  }
  let depth = 0;
  for (let j = i; j < bytes.length; j++) {
    const b = bytes[j];
    if (b === QUOTE) {
      const end = skipString(bytes, j);
      if (end < 0) return -1;
      j = end - 1;
    } else if (b === OPEN_BRACE || b === OPEN_BRACKET) depth++;
    else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) return j + 1;
    }
  }
  return -1;
}

/**
 * The spans of an array's elements, scanning from `i`: either the array's `[`, or (with `inside`) the
 * start of an element already known to be inside the array. Returns the spans and the index just past
 * the closing `]`, or null when the bytes are not such an array.
 */
export function scanArrayElements(bytes: Uint8Array, i: number, inside = false): { spans: Span[]; end: number } | null {
  let at = skipSpace(bytes, i);
  if (!inside) {
    if (bytes[at] !== OPEN_BRACKET) return null;
    at = skipSpace(bytes, at + 1);
    if (bytes[at] === CLOSE_BRACKET) return { spans: [], end: at + 1 };
  }
  const spans: Span[] = [];
  for (;;) {
    const start = skipSpace(bytes, at);
    const end = skipValue(bytes, start);
    if (end < 0) return null;
    spans.push([start, end]);
    at = skipSpace(bytes, end);
    if (bytes[at] === COMMA) at++;
    else if (bytes[at] === CLOSE_BRACKET) return { spans, end: at + 1 };
    else return null;
  }
}

/**
 * The span of the value of top-level member `key` of the object in `bytes` (keys compared as their raw
 * JSON text, so an escaped spelling of the key does not match), or null.
 */
export function memberValue(bytes: Uint8Array, key: string): Span | null {
  const wanted = new TextEncoder().encode(JSON.stringify(key));
  let at = skipSpace(bytes, 0);
  if (bytes[at] !== OPEN_BRACE) return null;
  at = skipSpace(bytes, at + 1);
  while (at < bytes.length && bytes[at] === QUOTE) {
    const keyEnd = skipString(bytes, at);
    if (keyEnd < 0) return null;
    const colon = skipSpace(bytes, keyEnd);
    if (bytes[colon] !== COLON) return null;
    const valueStart = skipSpace(bytes, colon + 1);
    const valueEnd = skipValue(bytes, valueStart);
    if (valueEnd < 0) return null;
    if (keyEnd - at === wanted.length && equalBytes(bytes, at, wanted)) return [valueStart, valueEnd];
    at = skipSpace(bytes, valueEnd);
    if (bytes[at] !== COMMA) return null;
    at = skipSpace(bytes, at + 1);
  }
  return null;
}

/** True when `bytes` holds `wanted` at `at`. */
function equalBytes(bytes: Uint8Array, at: number, wanted: Uint8Array): boolean {
  for (let k = 0; k < wanted.length; k++) if (bytes[at + k] !== wanted[k]) return false;
  return true;
}
