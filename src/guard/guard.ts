/**
 * The guard (docs/GUARD.md): while the tap mirrors a main conversation, it watches Claude Code's own
 * transcript of it, `<claude-dir>/projects/<encoded cwd>/<session>.jsonl`, and raises an alert when that
 * file is missing, a stub, or behind (it lacks prompts the mirror holds). It notes each commit's typed
 * prompt and looks later, in timers of its own, bounded per minute (docs/GUARD.md "Reading without cost");
 * a prompt is judged once it is `settleMs` old, and a bad verdict must hold `confirmMs` before it is an
 * alert (docs/GUARD.md "Timing: Claude Code writes on its own schedule").
 */
import type { CommitJob } from "../protocol/commit-job.ts";
import { Alarm } from "../utils/alarm.ts";
import { describe } from "../utils/describe-error.ts";
import { ProjectDirectories } from "../storage/claude-projects.ts";
import { type GuardAlert, GuardAlerts } from "./alerts.ts";
import { type GuardOptions, guardSettings } from "./guard-options.ts";
import { LookBudget } from "./look-budget.ts";
import { promptCandidates, promptKey } from "./prompts.ts";
import { lookAt } from "./transcript-look.ts";
import type { Verdict } from "./verdict.ts";
import { followBranch, type GuardSessionView, newWatched, notePrompt, viewOf, type Watched } from "./watched-session.ts";

/** A look that comes soon after another (a file still being read through). */
const CATCH_UP_MS = 200;
/** Added to a wait for a prompt to settle, so the look never comes a clock tick early. */
const SLACK_MS = 20;

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

/** The guard of one tap. */
export class Guard {
  readonly alerts: GuardAlerts;
  private readonly sessions = new Map<string, Watched>();
  /** Looks under way, by session. */
  private readonly looking = new Map<string, Promise<void>>();
  private readonly budget: LookBudget;
  private readonly sweep: ReturnType<typeof setInterval>;
  private readonly readAlarm: Alarm;
  private looks = 0;
  private bytesRead = 0;
  private errors = 0;
  private stopped = false;
  private readonly o: Required<GuardOptions>;
  /** Claude Code's project directories, as the searches for a transcript elsewhere share them. */
  private readonly projects: ProjectDirectories;

  constructor(options: GuardOptions) {
    this.o = guardSettings(options);
    this.projects = new ProjectDirectories(options.claudeDir);
    this.alerts = new GuardAlerts(options.stderr, options.log, this.o.onAlerts);
    this.budget = new LookBudget(this.o.maxLooksPerMinute);
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
    return s === undefined ? null : viewOf(s, this.o.clock());
  }

  /**
   * Looks at a watched session's transcript now, outside the budget, until it is judged (a few looks at
   * most: it was just restored, and the viewer waits to show the state after it); never rejects.
   */
  async lookNow(sessionId: string): Promise<void> {
    const s = this.sessions.get(sessionId);
    if (s === undefined) return;
    if (s.timer !== null) clearTimeout(s.timer);
    s.timer = null;
    s.pending = null; // what was raised before the restore is judged afresh
    for (let i = 0; i < 8 && !this.stopped; i++) {
      await this.looking.get(sessionId); // a look under way ends first
      if (await this.run(s, true) !== "catching-up") return;
    }
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

  /** Why Claude Code's transcripts cannot be read, while they cannot (a health problem: the guard is blind), else null. */
  get readFailure(): string | null {
    return this.readAlarm.failing ? (this.readAlarm.state().lastError ?? "error") : null;
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
      s = newWatched(id, job.base.cwd, now);
      this.evictOne();
    } else this.sessions.delete(id); // re-inserted last: the map runs from least to most recently active
    this.sessions.set(id, s);
    if (s.cwd === null && job.base.cwd !== null) s.cwd = job.base.cwd;
    s.lastActivity = now;
    followBranch(s, job.messages, job.compaction);
    const candidates = promptCandidates(job.messages);
    const last = job.messages.findLast((m) => m.role === "user");
    if (candidates.length > 0) notePrompt(s, candidates.map(promptKey), last?.chain ?? null, now, this.o.maxPrompts);
    this.schedule(s, this.o.settleMs + SLACK_MS);
  }

  /** Makes room for one more session by dropping the least recently active. */
  private evictOne(): void {
    while (this.sessions.size >= this.o.maxSessions) {
      const [oldest, s] = this.sessions.entries().next().value as [string, Watched];
      if (s.timer !== null) clearTimeout(s.timer);
      this.sessions.delete(oldest);
      this.alerts.forget(oldest);
    }
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

  /** One look, within the per-minute budget (unless `unbudgeted`); never rejects. Answers how the look went. */
  private async run(s: Watched, unbudgeted = false): Promise<"judged" | "catching-up" | "none"> {
    if (this.stopped || s.running || !this.sessions.has(s.sessionId)) return "none";
    const now = this.o.clock();
    const wait = unbudgeted ? 0 : this.budget.take(now);
    if (wait > 0) {
      this.schedule(s, wait);
      return "none";
    }
    this.looks++;
    s.running = true;
    s.lastLook = now;
    const look = this.look(s);
    this.looking.set(s.sessionId, look.then(() => {}, () => {}));
    try {
      const kind = await look;
      this.readAlarm.ok(() => `sessiontap: guard: reading Claude Code's transcripts works again`);
      return kind === "catching-up" ? "catching-up" : "judged";
    } catch (error) {
      this.errors++;
      this.o.log("error", { stage: "guard", session: s.sessionId, error: describe(error) });
      this.readAlarm.fail(
        describe(error),
        (first) =>
          `sessiontap: guard: cannot read Claude Code's transcript of session ${s.sessionId}${s.follower ? ` (${s.follower.path})` : ""}: ${describe(error)}${
            first ? "; the guard cannot tell whether it is whole" : " (still failing)"
          }`,
      );
      return "none";
    } finally {
      s.running = false;
      this.looking.delete(s.sessionId);
    }
  }

  /** Stats and reads the transcript, then judges it (or looks again soon, when still reading through). */
  private async look(s: Watched): Promise<"judged" | "catching-up" | "nowhere"> {
    const seen = await lookAt(s, { ...this.o, projects: this.projects });
    this.bytesRead += seen.bytes;
    if (seen.kind === "catching-up") this.schedule(s, CATCH_UP_MS);
    else if (seen.kind === "judged") this.judge(s, seen.verdict, seen.told);
    return seen.kind;
  }

  /** Turns a verdict into an alert once it held for `confirmMs`, or clears what was raised. */
  private judge(s: Watched, verdict: Verdict, told: boolean): void {
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
