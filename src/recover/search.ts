/**
 * Search across sessions (the viewer's search box): every term of the query, case-insensitive, in one
 * record's text, tool input or tool result. Pure.
 */
import { isConversation, searchableText, uuidOf, type Rec } from "./records.ts";

/** One record that matched. */
export interface SearchHit {
  sessionId: string | null;
  dir: string;
  uuid: string;
  type: string;
  timestamp: string | null;
  /** Text around the first match, one line. */
  snippet: string;
}

/** The terms of a query: whitespace-separated, lower-cased; a "quoted phrase" is one term. */
export function terms(query: string): string[] {
  const out: string[] = [];
  for (const m of query.matchAll(/"([^"]+)"|(\S+)/g)) out.push((m[1] ?? m[2]).toLowerCase());
  return out.filter((t) => t !== "");
}

/** The records of `sessions` that contain every term, newest session first as given, at most `limit`. */
export function search(sessions: { sessionId: string | null; dir: string; records: Rec[] }[], query: string, limit = 100): SearchHit[] {
  const want = terms(query);
  if (want.length === 0) return [];
  const hits: SearchHit[] = [];
  for (const s of sessions) {
    for (const r of s.records) {
      if (!isConversation(r) || uuidOf(r) === null) continue;
      const text = searchableText(r);
      const lower = text.toLowerCase();
      if (!want.every((t) => lower.includes(t))) continue;
      hits.push({
        sessionId: s.sessionId, dir: s.dir, uuid: uuidOf(r)!, type: String(r.type),
        timestamp: typeof r.timestamp === "string" ? r.timestamp : null, snippet: snippet(text, lower.indexOf(want[0]), want[0].length),
      });
      if (hits.length >= limit) return hits;
    }
  }
  return hits;
}

/** About 160 characters around a match, whitespace flattened. */
function snippet(text: string, at: number, length: number): string {
  const start = Math.max(0, at - 60);
  const end = Math.min(text.length, at + length + 100);
  return `${start > 0 ? "…" : ""}${text.slice(start, end).replace(/\s+/g, " ").trim()}${end < text.length ? "…" : ""}`;
}
