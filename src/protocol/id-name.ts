/**
 * The one gate from an id (a session's, an agent's — whatever a request or a record claims) to a file or
 * directory name: an id only ever becomes a name when it is plain (`[A-Za-z0-9._-]`, 1–128 characters,
 * not `.` or `..`), so the name can never hold a separator, climb out of its parent, or be too long for a
 * filesystem (docs/RELIABILITY.md "Trust boundaries"). Pure.
 */

const PLAIN = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * `id` + `suffix` as one name directly inside a directory, or null when the id cannot be one.
 *
 * @example nameInside("agent-a1", ".jsonl") // → "agent-a1.jsonl"; nameInside("../x") // → null
 */
export function nameInside(id: string, suffix = ""): string | null {
  if (!PLAIN.test(id) || id === "." || id === "..") return null;
  if (!/^[A-Za-z0-9._-]{0,16}$/.test(suffix)) return null;
  return id + suffix;
}

/**
 * True for a name the mirror root keeps for itself or for its hashed namespace: every dot name (`.locks`,
 * `.staging`, `.spool`, probes), the events log and its rotation, `unknown` (sessionless traffic) and
 * `inv-…` (ids that are not plain). Compared without case, for case-insensitive filesystems.
 */
export function isReservedName(name: string): boolean {
  const lower = name.toLowerCase();
  return lower.startsWith(".") || lower === "unknown" || lower.startsWith("inv-") || lower.startsWith("session-mirror-events");
}

/**
 * The name of Claude Code's transcript of session `id` (`<id>.jsonl`), or null when no session of Claude
 * Code can have that id (its ids are UUIDs; a name starting with a dot would be a hidden file).
 */
export function transcriptName(id: string): string | null {
  return /^[A-Za-z0-9]/.test(id) ? nameInside(id, ".jsonl") : null;
}
