/**
 * POSIX paths (the tap runs where Claude Code does): inside the tap's own trees, joined with "/" from names
 * that already went through the one gate that turns an id into a name (protocol/session-id.ts), and the mode
 * every directory of them gets; outside them, a path a user gave resolved against the working directory.
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

/** Resolves `path` against `base` when relative. */
export function absolute(path: string, base: string): string {
  if (path.startsWith("/")) return normalize(path);
  return normalize(`${base.replace(/\/+$/, "")}/${path}`);
}

/** Removes `.` and `..` segments and repeated slashes. */
function normalize(path: string): string {
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return "/" + out.join("/");
}
