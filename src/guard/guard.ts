/**
 * The guard (docs/GUARD.md): while the tap mirrors a main conversation, it watches Claude Code's own
 * transcript of it, `<claude-dir>/projects/<encoded cwd>/<session>.jsonl`, and raises an alert when that
 * file is missing, a stub, or behind (it lacks prompts the mirror holds).
 *
 * Off the relay path: the mirror hands it each main-conversation commit after the commit's write, and it
 * only notes the request's typed prompt (from the last user message: constant work, nothing proportional
 * to the history) and schedules a look a little later, in a timer of its own. A look is one lstat and, if
 * the file changed, one ranged read of what was appended (bounded bytes); looks are bounded per minute
 * across all sessions. A periodic sweep looks again at recently active sessions, so a transcript deleted
 * between turns is noticed before the next prompt.
 *
 * No false alarm on a healthy session: Claude Code writes a prompt before its request and the answer
 * after; a prompt is judged only once it is `settleMs` old, and a bad verdict must hold for `confirmMs`
 * before it becomes an alert. Only typed prompts are compared (see prompts.ts), so compaction, rewinds,
 * side requests, subagents and injected context change nothing. A session whose transcript was never
 * found (persistence off, another config dir) is counted, not alerted.
 */
import type { CommitJob } from "../protocol/commit-job.ts";
import { Alarm } from "../tap/alarm.ts";
import { projectsDir, transcriptPathFor } from "../storage/claude-projects.ts";
import { describe, type EventFields } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { join } from "../storage/mirror-tree.ts";
import { GuardAlerts, type GuardAlert, type GuardState } from "./alerts.ts";
import { promptCandidates, promptKey } from "./prompts.ts";
import { TranscriptFollower } from "./transcript-follower.ts";

/** How the guard is set up; the timings have defaults. */
export interface GuardOptions {
  fs: FsAdapter;
  claudeDir: string;
  clock: () => number;
  stderr: (line: string) => void;
  log: (action: string, fields: EventFields) => void;
  /** How old a prompt must be before its absence counts (Claude Code's own write timing). */
  settleMs?: number;
  /** How long a bad verdict must hold before it is an alert. */
  confirmMs?: number;
  /** How often recently active sessions are looked at without a turn. */
  sweepMs?: number;
  /** A session with no turn for this long is no longer swept. */
  activeMs?: number;
  /** Looks (stat + read) per minute, across all sessions. */
  maxLooksPerMinute?: number;
  /** Bytes read by one look at most. */
  maxBytesPerLook?: number;
  /** A transcript first met larger than this is read from its tail only. */
  tailBytes?: number;
  /** Sessions watched at most (least recently active go first). */
  maxSessions?: number;
  /** Prompts remembered per session at most. */
  maxPrompts?: number;
}

/** What health shows of the guard. */
export interface GuardHealth {
  /** Sessions with a turn in the last `activeMs`. */
  watching: number;
  /** Sessions whose transcript the guard has never found (Claude Code writes none, or elsewhere). */
  notFound: number;
  alerts: GuardAlert[];
  looks: number;
  bytesRead: number;
  errors: number;
}

/** One watched session. */
interface Watched {
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

/** A look that comes soon after another (a file still being read through). */
const CATCH_UP_MS = 200;
/** How often a session's transcript is searched for under every project directory, at most. */
const SEARCH_EVERY_MS = 60_000;
/** Added to a wait for a prompt to settle, so the look never comes a clock tick early. */
const SLACK_MS = 20;

/** The guard of one tap. */
export class Guard {
  readonly alerts: GuardAlerts;
  private readonly sessions = new Map<string, Watched>();
  private readonly lookTimes: number[] = [];
  private readonly sweep: ReturnType<typeof setInterval>;
  private readonly readAlarm: Alarm;
  private looks = 0;
  private bytesRead = 0;
  private errors = 0;
  private stopped = false;
  private readonly o: Required<GuardOptions>;

  constructor(options: GuardOptions) {
    this.o = {
      settleMs: 1500, confirmMs: 2000, sweepMs: 10_000, activeMs: 30 * 60_000, maxLooksPerMinute: 120,
      maxBytesPerLook: 2 * 1024 * 1024, tailBytes: 8 * 1024 * 1024, maxSessions: 256, maxPrompts: 4096, ...options,
    };
    this.alerts = new GuardAlerts(options.stderr, options.log);
    this.readAlarm = new Alarm(options.clock, options.stderr);
    this.sweep = setInterval(() => this.sweepActive(), this.o.sweepMs);
    (this.sweep as { unref?: () => void }).unref?.();
  }

  /** Notes a commit the mirror wrote; only main-conversation commits of a known session are watched. Never throws. */
  observe(job: CommitJob): void {
    if (this.stopped || job.route !== "main" || job.base.sessionId === null) return;
    // Off the path that answered the client: a timer of its own does the (small) work.
    const timer = setTimeout(() => this.note(job), 0);
    (timer as { unref?: () => void }).unref?.();
  }

  /** What the guard knows of a session, or null when it does not watch it. */
  inspect(sessionId: string): GuardSessionView | null {
    const s = this.sessions.get(sessionId);
    if (s === undefined) return null;
    return {
      path: s.follower?.path ?? null, seen: s.seen, lastLook: s.lastLook, verdict: s.verdict, verdictAt: s.verdictAt,
      dueInMs: s.timer === null ? null : s.dueAt - this.o.clock(), prompts: s.prompts.size,
    };
  }

  /** The alert of a session, or null (the viewer's banner). */
  alertOf(sessionId: string): GuardAlert | null {
    return this.alerts.of(sessionId);
  }

  /** What health shows. */
  health(): GuardHealth {
    const since = this.o.clock() - this.o.activeMs;
    let watching = 0;
    let notFound = 0;
    for (const s of this.sessions.values()) {
      if (s.lastActivity >= since) watching++;
      if (!s.seen && s.lastLook > 0) notFound++;
    }
    return { watching, notFound, alerts: this.alerts.list(), looks: this.looks, bytesRead: this.bytesRead, errors: this.errors };
  }

  /** Health problems: every alert, and a transcript the guard cannot read. */
  problems(): string[] {
    const out = this.alerts.problems();
    if (this.readAlarm.failing) out.push(`guard: cannot read Claude Code's transcripts (${this.readAlarm.state().lastError ?? "error"}): the guard is blind to them`);
    return out;
  }

  /** Stops every timer (the tap is stopping). */
  stop(): void {
    this.stopped = true;
    clearInterval(this.sweep);
    for (const s of this.sessions.values()) if (s.timer !== null) clearTimeout(s.timer);
  }

  /** Records the commit's typed prompt and schedules a look once Claude Code has had time to write. */
  private note(job: CommitJob): void {
    if (this.stopped) return;
    const now = this.o.clock();
    const id = job.base.sessionId!;
    let s = this.sessions.get(id);
    if (s === undefined) {
      s = {
        sessionId: id, cwd: job.base.cwd, follower: null, prompts: new Map(), lastActivity: now, lastLook: 0, seen: false, pending: null,
        timer: null, dueAt: 0, running: false, verdict: null, verdictAt: 0, searchedAt: 0,
      };
      this.evictFor(id);
    } else this.sessions.delete(id); // re-inserted last: the map runs from least to most recently active
    this.sessions.set(id, s);
    if (s.cwd === null && job.base.cwd !== null) s.cwd = job.base.cwd;
    s.lastActivity = now;
    const candidates = promptCandidates(job.messages);
    if (candidates.length > 0) {
      const keys = candidates.map(promptKey);
      const id = keys.join(" ");
      s.prompts.delete(id); // the newest sending counts: Claude Code writes each sending before its request
      s.prompts.set(id, { keys, seenAt: now });
      if (s.prompts.size > this.o.maxPrompts) s.prompts.delete(s.prompts.keys().next().value as string);
    }
    this.schedule(s, this.o.settleMs + SLACK_MS);
  }

  /** Makes room for one more session by dropping the least recently active. */
  private evictFor(id: string): void {
    while (this.sessions.size >= this.o.maxSessions) {
      const [oldest, s] = this.sessions.entries().next().value as [string, Watched];
      if (s.timer !== null) clearTimeout(s.timer);
      this.sessions.delete(oldest);
      this.alerts.forget(oldest);
    }
    void id;
  }

  /** Looks at `s` in `delayMs` (or sooner, if a look is already due sooner). */
  private schedule(s: Watched, delayMs: number): void {
    if (this.stopped) return;
    const due = this.o.clock() + delayMs;
    if (s.timer !== null) {
      if (s.dueAt <= due) return;
      clearTimeout(s.timer);
    }
    s.dueAt = due;
    s.timer = setTimeout(() => {
      s.timer = null;
      void this.run(s);
    }, delayMs);
    (s.timer as { unref?: () => void }).unref?.();
  }

  /** Looks at recently active sessions (and those with an alert) that no look is due for. */
  private sweepActive(): void {
    const now = this.o.clock();
    for (const s of this.sessions.values()) {
      const active = s.lastActivity >= now - this.o.activeMs || this.alerts.of(s.sessionId) !== null;
      if (active && s.timer === null && !s.running && now - s.lastLook >= this.o.sweepMs) this.schedule(s, 0);
    }
  }

  /** One look, within the per-minute budget; never rejects. */
  private async run(s: Watched): Promise<void> {
    if (this.stopped || s.running || !this.sessions.has(s.sessionId)) return;
    const now = this.o.clock();
    while (this.lookTimes.length > 0 && this.lookTimes[0] <= now - 60_000) this.lookTimes.shift();
    if (this.lookTimes.length >= this.o.maxLooksPerMinute) {
      this.schedule(s, this.lookTimes[0] + 60_000 - now + 1);
      return;
    }
    this.lookTimes.push(now);
    this.looks++;
    s.running = true;
    s.lastLook = now;
    try {
      await this.look(s);
      this.readAlarm.ok(() => `sessiontap: guard: reading Claude Code's transcripts works again`);
    } catch (error) {
      this.errors++;
      this.o.log("error", { stage: "guard", session: s.sessionId, error: describe(error) });
      this.readAlarm.fail(describe(error), (first) =>
        `sessiontap: guard: cannot read Claude Code's transcript of session ${s.sessionId}${s.follower ? ` (${s.follower.path})` : ""}: ${describe(error)}${first ? "; the guard cannot tell whether it is whole" : " (still failing)"}`);
    } finally {
      s.running = false;
    }
  }

  /** Stats and reads the transcript, then judges it. */
  private async look(s: Watched): Promise<void> {
    const fs = this.o.fs;
    if (s.follower === null) {
      if (s.cwd === null) return; // Claude Code's environment block never named the directory: nothing to find
      const path = await transcriptPathFor(fs, this.o.claudeDir, s.cwd, s.sessionId);
      s.follower = this.follower(path);
    }
    let look = await s.follower.look(fs, this.o.clock());
    if (look.kind !== "read" && this.o.clock() - s.searchedAt >= SEARCH_EVERY_MS) {
      // Claude Code may keep it under another project directory (a different working directory).
      s.searchedAt = this.o.clock();
      const elsewhere = await this.findElsewhere(s.sessionId, s.follower.path);
      if (elsewhere !== null) {
        s.follower = this.follower(elsewhere);
        look = await s.follower.look(fs, this.o.clock());
      }
    }
    if (look.kind === "read") {
      this.bytesRead += look.bytes;
      s.seen = true;
      if (!look.caughtUp) {
        this.schedule(s, CATCH_UP_MS);
        return;
      }
    }
    const verdict = this.verdict(s, look.kind);
    this.judge(s, verdict, verdict !== null || look.kind === "read");
  }

  /** A follower with the guard's limits. */
  private follower(path: string): TranscriptFollower {
    return new TranscriptFollower(path, { maxBytes: this.o.maxBytesPerLook, tailBytes: this.o.tailBytes });
  }

  /** Another `projects/<dir>/<session>.jsonl` regular file than `except`, or null. */
  private async findElsewhere(sessionId: string, except: string): Promise<string | null> {
    const projects = projectsDir(this.o.claudeDir);
    for (const entry of await this.o.fs.readdir(projects)) {
      if (!entry.isDirectory) continue;
      const path = join(projects, entry.name, `${sessionId}.jsonl`);
      if (path === except) continue;
      const info = await this.o.fs.lstat(path);
      if (info !== null && info.isFile) return path;
    }
    return null;
  }

  /** What is wrong now, or null when nothing is (or nothing can be told). */
  private verdict(s: Watched, kind: "read" | "missing" | "not-a-file"): { state: GuardState; lacking?: number } | null {
    if (kind !== "read") return kind === "missing" && s.seen ? { state: "missing" } : null;
    const f = s.follower!;
    if (f.fromStart && !f.conversation) return { state: "stub" };
    const now = this.o.clock();
    const judgeFrom = f.fromStart ? 0 : f.startedAt;
    let lacking = 0;
    for (const p of s.prompts.values()) {
      if (now - p.seenAt < this.o.settleMs || p.seenAt < judgeFrom) continue;
      if (!p.keys.some((k) => f.keys.has(k))) lacking++;
    }
    lacking -= f.oversizedPrompts;
    return lacking > 0 ? { state: "behind", lacking } : null;
  }

  /** Turns a verdict into an alert once it held for `confirmMs`, or clears what was raised. */
  private judge(s: Watched, verdict: { state: GuardState; lacking?: number } | null, told = true): void {
    const now = this.o.clock();
    s.verdict = told ? (verdict?.state ?? "ok") : null;
    s.verdictAt = now;
    if (verdict === null) {
      s.pending = null;
      this.alerts.clear(s.sessionId);
      return;
    }
    if (s.pending === null || s.pending.state !== verdict.state) {
      s.pending = { state: verdict.state, since: now };
      if (this.alerts.of(s.sessionId)?.state !== verdict.state) {
        this.schedule(s, this.o.confirmMs);
        return;
      }
    }
    if (now - s.pending.since < this.o.confirmMs) {
      this.schedule(s, s.pending.since + this.o.confirmMs - now);
      return;
    }
    this.alerts.raise(s.sessionId, verdict.state, s.pending.since, s.follower?.path ?? null, verdict.lacking);
  }
}
