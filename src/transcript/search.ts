// Search across sessions (`sessiontap search`, the viewer's box): conversation records matching a case-insensitive substring, a
// regular expression, or every term of a query, each with a snippet around the match. Pure.
import { isConversation, isToolResultOnly, scrubControl, searchableText, uuidOf } from "./records.ts";
import { type SessionData, sessionIdOf, sessionTitle } from "./summary.ts";
import { buildTree, restorePath } from "./tree.ts";

type Span = [number, number];

type Matcher = (text: string) => Span[];

export interface SearchHit {
  sessionId: string | null;
  dir: string;
  title: string | null;
  uuid: string;
  type: string;
  role: "user" | "assistant" | "tool result";
  timestamp: string | null;
  snippet: string;
  marks: Span[];
  /** On a branch the conversation left (rewound, or retried): not what resuming it continues. */
  offBranch: boolean;
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

function spansOf(re: RegExp, text: string): Span[] {
  const out: Span[] = [];
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m[0].length === 0) {
      re.lastIndex++;
      continue;
    }
    out.push([m.index, m.index + m[0].length]);
  }
  return out;
}

export function regexMatcher(source: string): Matcher {
  const re = new RegExp(source, "giu");
  return (text) => spansOf(re, text);
}

export const substringMatcher = (query: string) => regexMatcher(escapeRegex(query));

const terms = (query: string) => [...query.matchAll(/"([^"]+)"|(\S+)/g)].map((m) => m[1] ?? m[2]).filter((t) => t !== "");

export function termsPattern(query: string): RegExp | null {
  const all = terms(query).sort((a, b) => b.length - a.length);
  return all.length === 0 ? null : new RegExp(all.map(escapeRegex).join("|"), "giu");
}

export function termsMatcher(query: string): Matcher | null {
  const any = termsPattern(query);
  const each = terms(query).map((t) => new RegExp(escapeRegex(t), "iu"));
  return any === null ? null : (text) => (each.every((re) => re.test(text)) ? spansOf(any, text) : []);
}

export function search(sessions: Pick<SessionData, "dir" | "records" | "side">[], match: Matcher, limit = Number.POSITIVE_INFINITY): SearchHit[] {
  const hits: SearchHit[] = [];
  for (const s of sessions) {
    let session: { sessionId: string | null; title: string | null } | null = null;
    let current: Set<string> | null = null;
    const onBranch = (uuid: string) => (current ??= new Set(restorePath(buildTree(s.records)).map((r) => uuidOf(r)!))).has(uuid);
    for (const r of s.records) {
      if (!isConversation(r) || uuidOf(r) === null) continue;
      const text = scrubControl(searchableText(r));
      const spans = match(text);
      if (spans.length === 0) continue;
      const role = r.type === "assistant" ? "assistant" : isToolResultOnly(r) ? "tool result" : "user";
      session ??= { sessionId: sessionIdOf(s.dir, s.records), title: sessionTitle(s.side, s.records) };
      hits.push({
        ...session,
        dir: s.dir,
        uuid: uuidOf(r)!,
        type: String(r.type),
        role,
        timestamp: typeof r.timestamp === "string" ? r.timestamp : null,
        ...snippet(text, spans),
        offBranch: !onBranch(uuidOf(r)!),
      });
      if (hits.length >= limit) return hits;
    }
  }
  return hits;
}

export function snippet(text: string, spans: Span[]): { snippet: string; marks: Span[] } {
  const start = Math.max(0, spans[0][0] - 60);
  const end = Math.min(text.length, Math.max(spans[0][1] + 100, start + 200));
  const lead = start > 0 ? "…" : "";
  const at: number[] = []; // where each character of the window lands in the snippet
  let out = lead;
  for (let i = start; i < end; i++) {
    at.push(out.length);
    if (!/\s/.test(text[i])) out += text[i];
    else if (out.length > lead.length && !out.endsWith(" ")) out += " ";
  }
  at.push(out.length);
  const body = out.trimEnd();
  const mark = ([a, b]: Span): Span => [at[Math.max(a, start) - start], Math.min(at[Math.min(b, end) - start], body.length)];
  const marks = spans.filter(([a, b]) => b > start && a < end).map(mark).filter(([a, b]) => b > a);
  return { snippet: body + (end < text.length ? "…" : ""), marks };
}
