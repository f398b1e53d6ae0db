/** Which session a `SESSION` argument names (docs/DESIGN.md "Command line"): an id or directory name, or a unique prefix. Pure. */

/** A session as a reader knows it: its directory (or store key) and its id when known. */
export interface NamedSession {
  dir: string;
  id: string | null;
}

/** The outcome of matching a query against the known sessions. */
export type SessionMatch = { kind: "none" } | { kind: "ambiguous"; candidates: string[] } | { kind: "found"; dir: string };

/** Exact id or directory first; otherwise every session whose id or directory starts with `query`. */
export function matchSession(named: NamedSession[], query: string): SessionMatch {
  const exact = named.filter((n) => n.dir === query || n.id === query);
  const matches = exact.length > 0 ? exact : named.filter((n) => query !== "" && (n.dir.startsWith(query) || (n.id ?? "").startsWith(query)));
  if (matches.length === 0) return { kind: "none" };
  if (matches.length > 1) return { kind: "ambiguous", candidates: matches.map((m) => m.id ?? m.dir) };
  return { kind: "found", dir: matches[0].dir };
}
