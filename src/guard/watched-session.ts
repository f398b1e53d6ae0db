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
  /** Prompts the mirror holds, distinct (a prompt typed twice, or a retried request, is one): candidate keys and when last sent. */
  prompts: Map<string, { keys: string[]; seenAt: number }>;
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

/** Notes one sending of a prompt (its candidate keys); the oldest is forgotten past `max`. */
export function notePrompt(s: Watched, keys: string[], now: number, max: number): void {
  const id = keys.join(" ");
  s.prompts.delete(id); // the newest sending counts: Claude Code writes each sending before its request
  s.prompts.set(id, { keys, seenAt: now });
  if (s.prompts.size > max) s.prompts.delete(s.prompts.keys().next().value as string);
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
