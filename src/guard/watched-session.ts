/**
 * One session the guard watches: where its transcript is and what was read of it, the prompts the mirror
 * holds for it (distinct, with when each was last sent), and its scheduling and verdict state.
 */
import type { GuardState } from "./alerts.ts";
import type { TranscriptFollower } from "./transcript-follower.ts";

/** One watched session. */
export interface Watched {
  sessionId: string;
  cwd: string | null;
  follower: TranscriptFollower | null;
  /**
   * Prompts the current branch holds, distinct (a prompt typed twice, or a retried request, is one):
   * candidate keys, when last sent, where in the conversation (its message's chain) and in which segment.
   */
  prompts: Map<string, NotedPrompt>;
  /** The compacted segment the session is in (0 before any compaction), and the chain of the message it opens with. */
  segment: number;
  segmentHead: string | null;
  lastActivity: number;
  lastLook: number;
  /** The transcript has existed at some point while watched. */
  seen: boolean;
  /** A bad verdict waiting for confirmation. */
  pending: { state: GuardState; since: number } | null;
  timer: ReturnType<typeof setTimeout> | null;
  dueAt: number;
  running: boolean;
  /** When other project directories were last searched for the file (at most once a minute). */
  searchedAt: number;
  /** The generation of the project listing the last search looked up to (ProjectDirectories). */
  searchedUpTo: number;
  /** When every project directory was last searched (the others: only those new since). */
  fullSearchAt: number;
  /** The last verdict reached ("ok": nothing wrong; null: none yet, or nothing could be told) and when. */
  verdict: GuardState | "ok" | null;
  verdictAt: number;
}

/** One prompt the guard expects Claude Code's transcript to hold. */
export interface NotedPrompt {
  keys: string[];
  seenAt: number;
  chain: string | null;
  segment: number;
}

/** What the guard knows of one session (for tests and diagnostics). */
export interface GuardSessionView {
  path: string | null;
  seen: boolean;
  lastLook: number;
  verdict: GuardState | "ok" | null;
  verdictAt: number;
  /** Milliseconds until the next look is due, or null when none is scheduled. */
  dueInMs: number | null;
  prompts: number;
}

/** A session first seen at `now`. */
export function newWatched(sessionId: string, cwd: string | null, now: number): Watched {
  return {
    sessionId,
    cwd,
    follower: null,
    prompts: new Map(),
    segment: 0,
    segmentHead: null,
    lastActivity: now,
    lastLook: 0,
    seen: false,
    pending: null,
    timer: null,
    dueAt: 0,
    running: false,
    verdict: null,
    verdictAt: 0,
    searchedAt: 0,
    searchedUpTo: 0,
    fullSearchAt: Number.NEGATIVE_INFINITY,
  };
}

/** Notes one sending of a prompt (its candidate keys, its message's chain); the oldest is forgotten past `max`. */
export function notePrompt(s: Watched, keys: string[], chain: string | null, now: number, max: number): void {
  const id = keys.join(" ");
  s.prompts.delete(id); // the newest sending counts: Claude Code writes each sending before its request
  s.prompts.set(id, { keys, seenAt: now, chain, segment: s.segment });
  if (s.prompts.size > max) s.prompts.delete(s.prompts.keys().next().value as string);
}

/**
 * Follows the branch a request carries (docs/GUARD.md "The current branch"): Claude Code re-sends the
 * whole current branch of a segment, so a prompt of this segment that the request no longer carries was
 * rewound or edited away, and a restore rightly leaves it out: it is forgotten. A compaction opens a new
 * segment, whose requests carry only its summary; the prompts before it stay, as the transcript keeps them.
 */
export function followBranch(s: Watched, messages: readonly { role: string; chain: string | null }[], compaction: boolean): void {
  const head = messages.find((m) => m.role !== "system")?.chain ?? null;
  if (compaction && head !== s.segmentHead) {
    s.segment++;
    s.segmentHead = head;
    return;
  }
  s.segmentHead = head;
  const carried = new Set<string>();
  for (const m of messages) if (m.chain !== null) carried.add(m.chain);
  for (const [id, p] of s.prompts) if (p.segment === s.segment && p.chain !== null && !carried.has(p.chain)) s.prompts.delete(id);
}

/** What the guard knows of a session, as `Guard.inspect` shows it. */
export function viewOf(s: Watched, now: number): GuardSessionView {
  return {
    path: s.follower?.path ?? null,
    seen: s.seen,
    lastLook: s.lastLook,
    verdict: s.verdict,
    verdictAt: s.verdictAt,
    dueInMs: s.timer === null ? null : s.dueAt - now,
    prompts: s.prompts.size,
  };
}
