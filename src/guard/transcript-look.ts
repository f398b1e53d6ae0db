/**
 * One look at a watched session's transcript (docs/GUARD.md): one lstat and, if the file changed, one
 * bounded read of what was appended; where the file is not found, a search under the other project
 * directories at most once a minute — of the directories that are new since the last search, and of all
 * of them only every half hour (with 100,000 of them an idle tap spent 42 % of a core on 40 sessions'
 * searches). Returns the verdict on what is known, or that the file is still being read through.
 */
import { type ProjectDirectories, transcriptPathFor } from "../storage/claude-projects.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { TranscriptFollower } from "./transcript-follower.ts";
import { transcriptVerdict, type Verdict } from "./verdict.ts";
import type { Watched } from "./watched-session.ts";

/** How often a session's transcript is searched for under the project directories new since the last search, at most. */
const SEARCH_EVERY_MS = 60_000;
/** How often it is searched for under every project directory (an old one may have gained it). */
const FULL_SEARCH_EVERY_MS = 30 * 60_000;

/** What a look needs of the guard's settings. */
export interface LookSettings {
  fs: FsAdapter;
  claudeDir: string;
  clock: () => number;
  settleMs: number;
  maxBytesPerLook: number;
  tailBytes: number;
  /** The project directories, listed again only when they change (shared by every session's search). */
  projects: ProjectDirectories;
}

/**
 * What a look found: a verdict (`told`: whether it says anything), a file still being read through, or
 * nothing to look for (Claude Code's environment block never named the directory).
 */
export type LookResult =
  | { kind: "judged"; bytes: number; verdict: Verdict; told: boolean }
  | { kind: "catching-up"; bytes: number }
  | { kind: "nowhere"; bytes: 0 };

/** Looks at `s`'s transcript once, advancing its follower. */
export async function lookAt(s: Watched, o: LookSettings): Promise<LookResult> {
  const fs = o.fs;
  if (s.follower === null) {
    if (s.cwd === null) return { kind: "nowhere", bytes: 0 };
    const path = await transcriptPathFor(fs, o.claudeDir, s.cwd, s.sessionId);
    s.follower = follower(path, o);
  }
  let look = await s.follower.look(fs, o.clock());
  if (look.kind !== "read" && o.clock() - s.searchedAt >= SEARCH_EVERY_MS) {
    // Claude Code may keep it under another project directory (a different working directory).
    const now = o.clock();
    const full = now - s.fullSearchAt >= FULL_SEARCH_EVERY_MS;
    s.searchedAt = now;
    if (full) s.fullSearchAt = now;
    const elsewhere = await o.projects.find(fs, s.sessionId, s.follower.path, full ? 0 : s.searchedUpTo);
    s.searchedUpTo = elsewhere.upTo;
    if (elsewhere.path !== null) {
      s.follower = follower(elsewhere.path, o);
      look = await s.follower.look(fs, o.clock());
    }
  }
  const bytes = look.kind === "read" ? look.bytes : 0;
  if (look.kind === "read") {
    s.seen = true;
    if (!look.caughtUp) return { kind: "catching-up", bytes };
  }
  const f = s.follower;
  const known = {
    kind: look.kind,
    seen: s.seen,
    fromStart: f.fromStart,
    conversation: f.conversation,
    startedAt: f.startedAt,
    keys: f.keys,
    oversizedPrompts: f.oversizedPrompts,
  };
  const verdict = transcriptVerdict(known, s.prompts.values(), o.clock(), o.settleMs);
  return { kind: "judged", bytes, verdict, told: verdict !== null || look.kind === "read" };
}

/** A follower with the guard's limits. */
function follower(path: string, o: LookSettings): TranscriptFollower {
  return new TranscriptFollower(path, { maxBytes: o.maxBytesPerLook, tailBytes: o.tailBytes });
}
