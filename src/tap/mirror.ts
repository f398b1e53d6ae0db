/**
 * The session mirror (SPEC §4): plans each completed response against the session's lineage, appends its
 * records in one write, and only then advances the lineage. Never throws into the client path: every
 * failure is one events-log line and a count.
 */
import { planCommit } from "../protocol/commit-plan.ts";
import { Lineage, lineageFromRecords } from "../protocol/lineage-state.ts";
import { describe, EventsLog, type EventFields } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { join, MirrorTree } from "../storage/mirror-tree.ts";
import { sweepTree } from "../storage/sweep.ts";
import { SessionStates } from "./session-states.ts";
import { RequestMirror, type CommitJob, type MirrorRequest } from "./request-mirror.ts";

/** How the mirror is set up. */
export interface MirrorOptions {
  fs: FsAdapter;
  root: string;
  maxBytes: number;
  retentionDays: number;
  maxSessions: number;
  includeThinking: boolean;
  version: string;
  clock: () => number;
  stderr: (line: string) => void;
  /** Mirror side requests into `side/` (SESSIONTAP_SIDE_REQUESTS, default true). */
  sideRequests: boolean;
  /** fsync each append (default true). */
  sync?: boolean;
}

/** Counters shown by /_tap/health. */
export interface MirrorStats {
  responses: number;
  appends: number;
  records: number;
  bytes: number;
  interrupted: number;
  skipped: number;
  errors: number;
}

const SWEEP_EVERY_MS = 60_000;

/** The mirror of one root directory. */
export class Mirror {
  readonly tree: MirrorTree;
  readonly events: EventsLog;
  readonly stats: MirrorStats = { responses: 0, appends: 0, records: 0, bytes: 0, interrupted: 0, skipped: 0, errors: 0 };
  private readonly states: SessionStates<Lineage>;
  private readonly pending = new Set<Promise<void>>();
  private lastSweep = Number.NEGATIVE_INFINITY;
  private sweeping: Promise<void> | null = null;

  constructor(readonly options: MirrorOptions) {
    this.tree = new MirrorTree(options.fs, options.root, options.maxBytes, options.clock, options.sync ?? true);
    this.events = new EventsLog(options.fs, options.root, options.clock, options.stderr);
    this.states = new SessionStates<Lineage>(options.maxSessions, async (dir) => {
      const back = await this.tree.read(dir);
      if (back.files > 0) this.log("load", { dir: this.relative(dir), records: back.records.length, malformed: back.malformedLines });
      // A side exchange hangs from the main conversation: its parents are resolved there.
      const outside = dir.endsWith("/side") ? await this.lineageOf(dir.slice(0, -"/side".length)) : undefined;
      return lineageFromRecords(back.records, outside);
    });
  }

  /** Starts mirroring one request, or null when it is not a Messages API call (SPEC §4: only those are mirrored). */
  begin(request: MirrorRequest): RequestMirror | null {
    if (request.method !== "POST" || request.pathname !== "/v1/messages") return null;
    return new RequestMirror(this, request, this.options.clock());
  }

  /** Writes one response's records; resolves when written or given up, never rejects. */
  commit(job: CommitJob): Promise<void> {
    this.stats.responses++;
    if (job.kind !== "complete") this.stats.interrupted++;
    const main = join(this.options.root, job.sessionDir);
    const { dir, scope } =
      job.route === "agent" ? { dir: join(main, "subagents", `agent-${job.agentDir}`), scope: `${job.sessionDir}/agent-${job.agentDir}` }
      : job.route === "side" ? { dir: join(main, "side"), scope: `${job.sessionDir}/side` }
      : { dir: main, scope: job.sessionDir };
    const work = this.states
      .withIndex(dir, async (lineage) => {
        const mainLineage = job.route === "side" ? await this.lineageOf(main) : null;
        const staged = planCommit(job, lineage, mainLineage, scope, this.options.includeThinking);
        if (staged.records.length === 0) return;
        const text = staged.records.map((r) => JSON.stringify(r) + "\n").join("");
        const result = await this.tree.append(dir, text);
        // Only now, with the bytes on disk, does the lineage advance (SPEC §4 "Exactly once").
        for (const op of staged.ops) {
          if ("add" in op) lineage.add(op.add);
          else lineage.alias(op.alias.key, op.alias.uuid);
        }
        this.stats.appends++;
        this.stats.records += staged.records.length;
        this.stats.bytes += result.bytes;
        const file = result.path.slice(result.path.lastIndexOf("/") + 1);
        if (result.rotated) this.log("rotate", { dir: this.relative(dir), file });
        else if (result.created) this.log("open", { dir: this.relative(dir), file });
        this.log("append", { dir: this.relative(dir), route: job.route, kind: job.kind, records: staged.records.length, bytes: result.bytes, file });
      })
      .then(
        () => this.maybeSweep(),
        (error) => this.fail("append", error, { dir: this.relative(dir) }),
      );
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
    return work;
  }

  /** A directory's lineage, loaded from disk on first use. */
  private lineageOf(dir: string): Promise<Lineage> {
    return this.states.withIndex(dir, async (lineage) => lineage);
  }

  /** Records a request the mirror could not read (SPEC §5 "Bad input"): forwarded untouched, not mirrored. */
  skip(reason: string, fields: EventFields = {}): void {
    this.stats.skipped++;
    this.log("skip", { reason, ...fields });
  }

  /** Counts a failure and logs it once. */
  fail(stage: string, error: unknown, fields: EventFields = {}): void {
    this.stats.errors++;
    this.log("error", { stage, error: describe(error), ...fields });
  }

  /** Appends an event to the events log (never rejects). */
  log(action: string, fields: EventFields = {}): void {
    void this.events.log(action, fields);
  }

  /** Waits for every write in flight and the events log, at most `boundMs`. */
  async flush(boundMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs)));
    await Promise.race([Promise.all([...this.pending, this.sweeping]).then(() => this.events.flush()), bound]);
    clearTimeout(timer);
  }

  /** Runs the retention sweep if a minute passed since the last one (lazy, throttled: SPEC §4). */
  maybeSweep(): void {
    const days = this.options.retentionDays;
    const now = this.options.clock();
    if (days === 0 || this.sweeping !== null || now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    const cutoff = now - days * 86_400_000;
    this.sweeping = sweepTree(this.options.fs, this.options.root, cutoff)
      .then((result) => {
        for (const dir of result.touchedDirs) {
          this.tree.forget(dir);
          this.states.forget(dir);
        }
        if (result.removedFiles > 0 || result.prunedDirs > 0) {
          this.log("sweep", { removed: result.removedFiles, pruned: result.prunedDirs });
        }
      })
      .catch((error) => this.fail("sweep", error))
      .finally(() => (this.sweeping = null));
  }

  /** Resolves when the sweep in progress (if any) is done. */
  sweepDone(): Promise<void> {
    return this.sweeping ?? Promise.resolve();
  }

  /** Sessions held in memory. */
  get sessionsInMemory(): number {
    return this.states.size;
  }

  /** A directory relative to the root, for the events log. */
  private relative(dir: string): string {
    return dir.startsWith(this.options.root) ? dir.slice(this.options.root.length).replace(/^\/+/, "") : dir;
  }
}
