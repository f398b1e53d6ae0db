/** JSON as it comes off the wire: an object is a plain record until a reader checks what it holds. Pure. */

/** A JSON object as it came off the wire. */
export type Json = Record<string, unknown>;

/** True for a plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
