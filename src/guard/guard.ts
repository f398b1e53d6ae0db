// Says once per session and state when Claude Code's own transcript of a mirrored session is missing, a stub or behind (docs/GUARD.md).
import { dirname } from "node:path/posix";
import { LRUCache } from "lru-cache";
import type { CommitJob } from "../protocol/commit-job.ts";
import { ProjectDirectories, transcriptPathFor } from "../storage/claude-projects.ts";
import type { EventFields } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { JsonlFollower } from "../storage/jsonl-follower.ts";
import { answerKey, judge, lackingWords, newFileFacts, noteLine, promptCandidates, promptKey, type Verdict } from "../transcript/transcript-state.ts";
import { Alarm } from "../utils/alarm.ts";
import { describe } from "../utils/describe-error.ts";

/** Timings and bounds (docs/GUARD.md), which tests shorten. */
const DEFAULTS = {
  settleMs: 1500,
  confirmMs: 2000,
  sweepMs: 10_000,
  activeMs: 30 * 60_000,
  maxLooksPerMinute: 120,
  maxBytesPerLook: 2 * 1024 * 1024,
  tailBytes: 8 * 1024 * 1024,
  maxSessions: 256,
  maxPrompts: 4096,
  onAlerts: (_alerts: GuardAlert[]): void => {},
};

export type GuardOptions = Partial<typeof DEFAULTS> & {
  fs: FsAdapter;
  claudeDir: string;
  clock: () => number;
  stderr: (line: string) => void;
  log: (action: string, fields: EventFields) => void;
};

type GuardState = Exclude<Verdict["state"], "intact">;

export interface GuardAlert {
  sessionId: string;
  state: GuardState;
  since: string;
  path: string | null;
  /** For "behind": the prompts, and answers, of the mirror's current branch it lacks. */
  lacking?: number;
  lackingAnswers?: number;
  command: string;
}

export type GuardHealth = ReturnType<Guard["health"]>;

type Expected = { keys: string[]; at: number; answer: boolean; chain: string | null; segment: number };

/** `startedAt`: when its file was first read (prompts noted before a tail window are not judged). */
function fresh(sessionId: string, maxPrompts: number) {
  return {
    sessionId,
    cwd: null as string | null,
    follower: null as JsonlFollower | null,
    facts: newFileFacts(),
    startedAt: 0,
    expected: new LRUCache<string, Expected>({ max: maxPrompts }),
    segment: 0,
    segmentHead: null as string | null,
    lastActivity: 0,
    lastLook: 0,
    seen: false,
    told: new Set<GuardState>(),
    pending: null as { state: GuardState; since: number } | null,
    timer: null as ReturnType<typeof setTimeout> | null,
    dueAt: 0,
    looking: null as Promise<unknown> | null,
    search: { at: 0, upTo: 0, fullAt: Number.NEGATIVE_INFINITY },
    verdict: null as GuardState | "ok" | null,
    verdictAt: 0,
  };
}
type Watched = ReturnType<typeof fresh>;

const CATCH_UP_MS = 200;
const SLACK_MS = 20;
/** A transcript not found is searched for under the project directories new since the last search, and under all of them. */
const SEARCH_EVERY_MS = 60_000;
const FULL_SEARCH_EVERY_MS = 30 * 60_000;
const MAX_KEYS = 20_000;

/** At most `max` looks in any minute, across all sessions. */
export class LookBudget {
  private readonly times: number[] = [];
  constructor(private readonly max: number, private readonly windowMs = 60_000) {}

  take(now: number): number {
    while (this.times.length > 0 && this.times[0] <= now - this.windowMs) this.times.shift();
    if (this.times.length >= this.max) return this.times[0] + this.windowMs - now + 1;
    this.times.push(now);
    return 0;
  }
}

export class Guard {
  private readonly alerts = new Map<string, GuardAlert>();
  private readonly sessions: LRUCache<string, Watched>;
  /** Project directories watched, with the sessions whose transcript is there. */
  private readonly watched = new Map<string, { close: () => void; sessions: Set<string> }>();
  private readonly budget: LookBudget;
  private readonly sweep: ReturnType<typeof setInterval>;
  private readonly readAlarm: Alarm;
  private readonly projects: ProjectDirectories;
  private readonly o: Required<GuardOptions>;
  private readonly counts = { looks: 0, bytesRead: 0, errors: 0 };
  private stopped = false;

  constructor(options: GuardOptions) {
    this.o = { ...DEFAULTS, ...options };
    this.sessions = new LRUCache({ max: this.o.maxSessions, dispose: (s, _, reason) => reason === "evict" && this.drop(s) });
    this.projects = new ProjectDirectories(options.claudeDir);
    this.budget = new LookBudget(this.o.maxLooksPerMinute);
    this.readAlarm = new Alarm(options.clock, options.stderr);
    this.sweep = setInterval(() => this.sweepActive(), this.o.sweepMs);
    (this.sweep as { unref?: () => void }).unref?.();
  }

  observe(job: CommitJob): void {
    if (this.stopped || job.route !== "main" || job.base.sessionId === null) return;
    queueMicrotask(() => this.note(job));
  }

  inspect(sessionId: string) {
    const s = this.sessions.peek(sessionId);
    if (s === undefined) return null;
    return {
      path: s.follower?.path ?? null,
      lastLook: s.lastLook,
      verdict: s.verdict,
      verdictAt: s.verdictAt,
      dueInMs: s.timer === null ? null : s.dueAt - this.o.clock(),
      prompts: [...s.expected.values()].filter((e) => !e.answer).length,
    };
  }

  /** Looks at a session now, outside the budget, until it is judged (it was just restored, and the viewer waits); never rejects. */
  async lookNow(sessionId: string): Promise<void> {
    const s = this.sessions.peek(sessionId);
    if (s === undefined) return;
    if (s.timer !== null) clearTimeout(s.timer);
    s.timer = null;
    s.pending = null; // what was raised before the restore is judged afresh
    for (let i = 0; i < 8 && !this.stopped; i++) {
      await s.looking;
      if (await this.run(s, true) !== "catching-up") return;
    }
  }

  health() {
    const since = this.o.clock() - this.o.activeMs;
    const all = [...this.sessions.values()];
    return {
      watching: all.filter((s) => s.lastActivity >= since).length,
      notFound: all.filter((s) => !s.seen && s.lastLook > 0).length,
      alerts: this.alertList(),
      ...this.counts,
    };
  }

  problems(): string[] {
    const out = this.alertList().map((a) =>
      `guard: Claude Code's transcript of ${a.sessionId} ${
        a.state === "behind" ? `is behind the mirror (lacks ${a.lacking ?? 0} prompts)` : a.state === "stub" ? "is a stub" : "is missing"
      }: ${a.command}`
    );
    if (this.readAlarm.failing) {
      out.push(`guard: cannot read Claude Code's transcripts (${this.readAlarm.state().lastError ?? "error"}): the guard is blind to them`);
    }
    return out;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.sweep);
    for (const s of this.sessions.values()) if (s.timer !== null) clearTimeout(s.timer);
    for (const w of this.watched.values()) w.close();
    this.watched.clear();
  }

  private note(job: CommitJob): void {
    if (this.stopped) return;
    const now = this.o.clock();
    const id = job.base.sessionId!;
    const s = this.sessions.get(id) ?? fresh(id, this.o.maxPrompts);
    this.sessions.set(id, s);
    s.cwd ??= job.base.cwd;
    s.lastActivity = now;
    followBranch(s, job.messages, job.compaction);
    const chain = job.messages.findLast((m) => m.role === "user")?.chain ?? null;
    // The newest sending counts: Claude Code writes each before its request.
    const expect = (e: Expected) => s.expected.set(e.keys.join(" "), e);
    const prompts = promptCandidates(job.messages).map(promptKey);
    if (prompts.length > 0) expect({ keys: prompts, at: now, answer: false, chain, segment: s.segment });
    const answer = job.kind === "complete" ? job.answer?.message.id : undefined;
    if (typeof answer === "string" && answer !== "") expect({ keys: [answerKey(answer)], at: now, answer: true, chain, segment: s.segment });
    this.schedule(s, this.o.settleMs + SLACK_MS);
  }

  private drop(s: Watched): void {
    if (s.timer !== null) clearTimeout(s.timer);
    if (this.alerts.delete(s.sessionId)) this.o.onAlerts(this.alertList());
    this.unwatch(s);
  }

  private alertList(): GuardAlert[] {
    return [...this.alerts.values()].sort((a, b) => a.since.localeCompare(b.since));
  }

  private raise(s: Watched, state: GuardState, sinceMs: number, lacking: Verdict["lacking"]): void {
    const counts: { lacking?: number; lackingAnswers?: number } = state === "behind" ? { lacking: lacking.prompts, lackingAnswers: lacking.answers } : {};
    const current = this.alerts.get(s.sessionId);
    if (current?.state === state) {
      if (current.lacking !== counts.lacking || current.lackingAnswers !== counts.lackingAnswers) {
        Object.assign(current, counts), this.o.onAlerts(this.alertList());
      }
      return;
    }
    const [path, command] = [s.follower?.path ?? null, `sessiontap restore ${s.sessionId}`];
    this.alerts.set(s.sessionId, { sessionId: s.sessionId, state, since: new Date(sinceMs).toISOString(), path, ...counts, command });
    this.o.log("guard-alert", { session: s.sessionId, state, ...(counts as Record<string, number>) });
    this.o.onAlerts(this.alertList());
    if (s.told.has(state)) return;
    s.told.add(state);
    const what = state === "missing"
      ? "is gone"
      : state === "stub"
      ? "is a stub (no conversation left in it, so claude --resume cannot continue it)"
      : `is behind the mirror: it lacks ${lackingWords(lacking)} the mirror holds (the file was cut or started afresh)`;
    this.o.stderr(
      `sessiontap: guard: Claude Code's transcript of session ${s.sessionId} ${what}${path === null ? "" : ` (${path})`}; ` +
        `the mirror holds the conversation: quit Claude Code, then run: ${command}`,
    );
  }

  private clear(s: Watched): void {
    const current = this.alerts.get(s.sessionId);
    s.told.clear();
    if (current === undefined) return;
    this.alerts.delete(s.sessionId);
    this.o.onAlerts(this.alertList());
    this.o.log("guard-clear", { session: s.sessionId, state: current.state });
    this.o.stderr(`sessiontap: guard: Claude Code's transcript of session ${s.sessionId} is whole again`);
  }

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

  /** Where the file system cannot tell: looks at recently active sessions (and those with an alert) that no look is due for. */
  private sweepActive(): void {
    const now = this.o.clock();
    for (const s of this.sessions.values()) {
      const active = s.lastActivity >= now - this.o.activeMs || this.alerts.has(s.sessionId);
      if (active && s.timer === null && s.looking === null && now - s.lastLook >= this.o.sweepMs) this.schedule(s, 0);
    }
  }

  /** Never rejects. */
  private async run(s: Watched, unbudgeted = false): Promise<"judged" | "catching-up" | "none"> {
    if (this.stopped || s.looking !== null || this.sessions.peek(s.sessionId) !== s) return "none";
    const now = this.o.clock();
    const wait = unbudgeted ? 0 : this.budget.take(now);
    if (wait > 0) return (this.schedule(s, wait), "none");
    this.counts.looks++;
    s.lastLook = now;
    const look = this.look(s);
    s.looking = look.catch(() => {});
    try {
      const kind = await look;
      this.readAlarm.ok(() => `sessiontap: guard: reading Claude Code's transcripts works again`);
      return kind;
    } catch (error) {
      const why = describe(error);
      this.counts.errors++;
      this.o.log("error", { stage: "guard", session: s.sessionId, error: why });
      const line = `sessiontap: guard: cannot read Claude Code's transcript of session ${s.sessionId}${s.follower ? ` (${s.follower.path})` : ""}: ${why}`;
      this.readAlarm.fail(why, (first) => `${line}${first ? "; the guard cannot tell whether it is whole" : " (still failing)"}`);
      return "none";
    } finally {
      s.looking = null;
    }
  }

  /** An lstat, a bounded read of what was appended, a search elsewhere at most once a minute (docs/GUARD.md "Reading without cost"); then the judge. */
  private async look(s: Watched): Promise<"judged" | "catching-up"> {
    if (s.follower === null) {
      if (s.cwd === null) return "judged";
      this.follow(s, await transcriptPathFor(this.o.fs, this.o.claudeDir, s.cwd, s.sessionId));
    }
    let read = await this.read(s);
    const now = this.o.clock();
    if (read.kind !== "read" && now - s.search.at >= SEARCH_EVERY_MS) {
      const full = now - s.search.fullAt >= FULL_SEARCH_EVERY_MS;
      s.search.at = now;
      if (full) s.search.fullAt = now;
      const elsewhere = await this.projects.find(this.o.fs, s.sessionId, s.follower!.path, full ? 0 : s.search.upTo);
      s.search.upTo = elsewhere.upTo;
      if (elsewhere.path !== null) {
        this.follow(s, elsewhere.path);
        read = await this.read(s);
      }
    }
    if (read.kind === "read") {
      s.seen = true;
      this.watch(s);
      if (!read.atEnd) return (this.schedule(s, CATCH_UP_MS), "catching-up");
    }
    const told = read.kind === "read" || (read.kind === "missing" && s.seen);
    const mirror = { expected: [...s.expected.values()], holds: null };
    const since = s.facts.whole ? undefined : s.startedAt;
    this.decide(s, told ? judge(read.kind === "read" ? s.facts : null, mirror, { now: this.o.clock(), settleMs: this.o.settleMs, since }) : null);
    return "judged";
  }

  private follow(s: Watched, path: string): void {
    this.unwatch(s);
    s.follower = new JsonlFollower(path, { startAt: (size) => (size > this.o.tailBytes ? size - this.o.tailBytes : 0), maxLine: this.o.maxBytesPerLook / 2 });
  }

  private async read(s: Watched) {
    const read = await s.follower!.read(this.o.fs, (l) => noteLine(s.facts, l.bytes, l.oversized), {
      maxBytes: this.o.maxBytesPerLook,
      onRestart: (start) => ((s.facts = newFileFacts(start === 0)), (s.startedAt = this.o.clock())),
    });
    if (read.kind !== "read") s.facts = newFileFacts();
    else this.counts.bytesRead += read.bytes;
    for (const set of [s.facts.keys, s.facts.own]) while (set.size > MAX_KEYS) set.delete(set.values().next().value as string);
    return read;
  }

  /** One watcher per directory, so a change is looked at at once rather than at the next sweep. */
  private watch(s: Watched): void {
    const dir = dirname(s.follower!.path);
    const known = this.watched.get(dir);
    if (known !== undefined || this.o.fs.watch === undefined) return void known?.sessions.add(s.sessionId);
    const entry = { close: () => {}, sessions: new Set([s.sessionId]) };
    const close = this.o.fs.watch(dir, (name) => {
      for (const id of entry.sessions) {
        const w = this.sessions.peek(id);
        if (w !== undefined && (name === null || name === `${id}.jsonl`)) this.schedule(w, CATCH_UP_MS);
      }
    }, () => this.watched.delete(dir));
    if (close === null) return;
    entry.close = close;
    this.watched.set(dir, entry);
  }

  private unwatch(s: Watched): void {
    if (s.follower === null) return;
    const dir = dirname(s.follower.path);
    const w = this.watched.get(dir);
    if (w === undefined || !w.sessions.delete(s.sessionId) || w.sessions.size > 0) return;
    w.close();
    this.watched.delete(dir);
  }

  /** Turns a verdict into an alert once it held for `confirmMs` (Claude Code writes on its own schedule), or clears what was raised. */
  private decide(s: Watched, verdict: Verdict | null): void {
    const now = this.o.clock();
    s.verdict = verdict === null ? null : verdict.state === "intact" ? "ok" : verdict.state;
    s.verdictAt = now;
    if (verdict === null || verdict.state === "intact") {
      s.pending = null;
      if (verdict !== null) this.clear(s);
      return;
    }
    if (s.pending === null || s.pending.state !== verdict.state) {
      s.pending = { state: verdict.state, since: now };
      if (this.alerts.get(s.sessionId)?.state !== verdict.state) return this.schedule(s, this.o.confirmMs);
    }
    if (now - s.pending.since < this.o.confirmMs) return this.schedule(s, s.pending.since + this.o.confirmMs - now);
    this.raise(s, verdict.state, s.pending.since, verdict.lacking);
  }
}

/** What this segment's requests no longer carry was rewound away; a compaction opens a new segment (docs/GUARD.md "The current branch"). */
function followBranch(s: Watched, messages: readonly { role: string; chain: string | null }[], compaction: boolean): void {
  const head = messages.find((m) => m.role !== "system")?.chain ?? null;
  const opens = compaction && head !== s.segmentHead;
  s.segmentHead = head;
  if (opens) return void s.segment++;
  const carried = new Set(messages.map((m) => m.chain));
  const gone = [...s.expected.entries()].filter(([, e]) => e.segment === s.segment && e.chain !== null && !carried.has(e.chain));
  for (const [key] of gone) s.expected.delete(key);
}
