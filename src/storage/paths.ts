/**
 * Paths inside the tap's own trees: joined with "/" from names that already went through the one gate
 * that turns an id into a name (protocol/id-name.ts), and the mode every directory of them gets.
 */

/** Directory mode for every directory the tap creates: its user's only (docs/DESIGN.md "Trust boundaries"). */
export const DIR_MODE = 0o700;

/**
 * Joins path parts with "/", folding doubled separators.
 * @example
 * join("/root/", "session", "side"); // "/root/session/side"
 */
export function join(...parts: string[]): string {
  return parts.join("/").replace(/\/{2,}/g, "/");
}
