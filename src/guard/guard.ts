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
import { Alarm } from "../utils/alarm.ts";
import { describe } from "../storage/events-log.ts";
import { ProjectDirectories } from "../storage/claude-projects.ts";
import { type GuardAlert, GuardAlerts } from "./alerts.ts";
import { type GuardHealth, type GuardOptions, guardSettings } from "./guard-options.ts";
import { LookBudget } from "./look-budget.ts";
import { promptCandidates, promptKey } from "./prompts.ts";
import { lookAt } from "./transcript-look.ts";
import type { Verdict } from "./verdict.ts";
import { type GuardSessionView, newWatched, notePrompt, viewOf, type Watched } from "./watched-session.ts";

/** A look that comes soon after another (a file still being read through). */
const CATCH_UP_MS = 200;
/** Added to a wait for a prompt to settle, so the look never comes a clock tick early. */
const SLACK_MS = 20;

/** The guard of one tap. */
export class Guard {
  readonly alerts: GuardAlerts;
  private readonly sessions = new Map<string, Watched>();
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
    if (this.readAlarm.failing) {
      out.push(`guard: cannot read Claude Code's transcripts (${this.readAlarm.state().lastError ?? "error"}): the guard is blind to them`);
    }
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
      s = newWatched(id, job.base.cwd, now);
      this.evictOne();
    } else this.sessions.delete(id); // re-inserted last: the map runs from least to most recently active
    this.sessions.set(id, s);
    if (s.cwd === null && job.base.cwd !== null) s.cwd = job.base.cwd;
    s.lastActivity = now;
    const candidates = promptCandidates(job.messages);
    if (candidates.length > 0) notePrompt(s, candidates.map(promptKey), now, this.o.maxPrompts);
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

  /** One look, within the per-minute budget; never rejects. */
  private async run(s: Watched): Promise<void> {
    if (this.stopped || s.running || !this.sessions.has(s.sessionId)) return;
    const now = this.o.clock();
    const wait = this.budget.take(now);
    if (wait > 0) {
      this.schedule(s, wait);
      return;
    }
    this.looks++;
    s.running = true;
    s.lastLook = now;
    try {
      await this.look(s);
      this.readAlarm.ok(() => `sessiontap: guard: reading Claude Code's transcripts works again`);
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
    } finally {
      s.running = false;
    }
  }

  /** Stats and reads the transcript, then judges it (or looks again soon, when still reading through). */
  private async look(s: Watched): Promise<void> {
    const seen = await lookAt(s, { ...this.o, projects: this.projects });
    this.bytesRead += seen.bytes;
    if (seen.kind === "catching-up") this.schedule(s, CATCH_UP_MS);
    else if (seen.kind === "judged") this.judge(s, seen.verdict, seen.told);
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
