/**
 * The session mirror (docs/DESIGN.md "The mirror"): routes each commit to its conversation directory and
 * hands it to the directory writer. Never throws into the client path: every failure is one events-log
 * line and a count, what could not be written waits in a bounded queue, retried with backoff, and what is
 * still waiting at shutdown is saved to a spool that the next start replays. Failures are said on stderr
 * and listed as health problems (mirror-alarms.ts).
 */
import { conversationOf } from "../protocol/conversation.ts";
import { HashCache } from "../protocol/hash-cache.ts";
import type { Lineage } from "../protocol/lineage-state.ts";
import { DirLocks } from "../storage/dir-lock.ts";
import { describe, EventsLog, type EventFields } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { MirrorTree } from "../storage/mirror-tree.ts";
import { MirrorSpool, rootSpoolDir, tempSpoolPlace } from "../storage/mirror-spool.ts";
import { ownerAlive, selfOwner } from "../storage/process-identity.ts";
import { MirrorAlarms } from "./mirror-alarms.ts";
import { newDirState, refresh, writeJob, type DirState, type WriterDeps } from "./dir-writer.ts";
import type { CommitJob } from "../protocol/commit-job.ts";
import { RequestMirror, type MirrorRequest } from "./request-mirror.ts";
import { SessionStates } from "./session-states.ts";
import type { CommitSink } from "./commit-sink.ts";
import { RetentionSweeper } from "./retention.ts";
import { Backlog } from "./backlog.ts";
import { join } from "../storage/paths.ts";
import { settlesWithin } from "../utils/within.ts";

/** How the mirror is set up. */
export interface MirrorOptions {
  fs: FsAdapter;
  root: string;
  maxBytes: number;
  retentionDays: number;
  maxSessions: number;
  includeThinking: boolean;
  /** Mirror side requests into `side/` (SESSIONTAP_SIDE_REQUESTS, default true). */
  sideRequests: boolean;
  version: string;
  clock: () => number;
  stderr: (line: string) => void;
  /** fsync each append (default true). */
  sync?: boolean;
  /** Longest wait for another process's writer lock (default 2000 ms). */
  lockWaitMs?: number;
  /** Most commits kept in memory while writes fail (default 1000). */
  maxQueued?: number;
  /** Other places every commit goes (a shared store). */
  sinks?: CommitSink[];
  /** Write the local tree (default true; false when a store replaces it). */
  files?: boolean;
  /** Where unwritten commits go at shutdown when the root refuses them (default: under the system temp dir). */
  tempSpool?: import("../storage/mirror-spool.ts").SpoolPlace;
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
  /** Commits waiting in memory for a write to succeed. */
  queued: number;
  /** Commits dropped because the queue was full (their records are not on disk). */
  dropped: number;
  /** Torn final lines moved aside into .torn files. */
  repaired: number;
  /** Responses whose mirroring failed inside the tap (an internal error): not in the mirror. */
  unmirrored: number;
  /** Commits replayed at start from a spool an earlier run saved. */
  replayed: number;
  /**
   * Final events released before their write finished (the hold-back bound expired): the client saw a
   * whole answer that was not yet on disk (docs/RELIABILITY.md "The hold-back window").
   */
  late: number;
}

/** What stopping did with commits that could not be written. */
export type Unwritten =
  | { kind: "none" }
  | { kind: "saved"; commits: number; path: string }
  | { kind: "lost"; commits: number; error: string };

/** What starting found in the spools of earlier runs. */
export interface Replayed {
  commits: number;
  files: string[];
  /** Commits of those that are still waiting (writes failed); their files are kept until they are written. */
  waiting: number;
}

/** The mirror of one root directory. */
export class Mirror {
  readonly tree: MirrorTree;
  readonly events: EventsLog;
  readonly locks: DirLocks;
  readonly stats: MirrorStats;
  /** Message hashes remembered across requests (bounded). */
  readonly hashes = new HashCache();
  private readonly states: SessionStates<DirState>;
  private readonly backlog: Backlog<CommitJob>;
  private readonly pending = new Set<Promise<void>>();
  private readonly deps: WriterDeps;
  private readonly sweeper: RetentionSweeper;
  readonly alarms: MirrorAlarms;
  private readonly spool: MirrorSpool;
  /** Spool files replayed at start whose commits are not all written yet. */
  private spoolFiles: string[] = [];
  private readonly sinks: CommitSink[];
  /** Told of each commit once its writes settled (the guard). */
  private readonly committed: ((job: CommitJob) => void)[] = [];

  constructor(readonly options: MirrorOptions) {
    const { fs, root, clock } = options;
    this.sinks = [...(options.sinks ?? [])];
    this.tree = new MirrorTree(fs, root, options.maxBytes, clock, options.sync ?? true);
    this.events = new EventsLog(fs, root, clock, {
      failed: (error) => this.alarms.eventsLogFailed(error),
      written: () => this.alarms.eventsLogWritten(),
    });
    this.alarms = new MirrorAlarms(clock, options.stderr, root, this.events.path);
    const self = selfOwner(fs);
    this.locks = new DirLocks(fs, root, {
      self, isAlive: (owner) => ownerAlive(fs, owner), waitMs: options.lockWaitMs ?? 2000, clock,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    });
    const underRoot = rootSpoolDir(root);
    this.spool = new MirrorSpool(fs, [{ dir: underRoot, ensure: () => this.tree.ensureDir(underRoot) }, options.tempSpool ?? tempSpoolPlace(fs, root)], self);
    this.deps = { tree: this.tree, locks: this.locks, includeThinking: options.includeThinking };
    const backlog = (this.backlog = new Backlog<CommitJob>(options.maxQueued ?? 1000));
    this.stats = {
      responses: 0, appends: 0, records: 0, bytes: 0, interrupted: 0, skipped: 0, errors: 0, dropped: 0, repaired: 0, unmirrored: 0, replayed: 0, late: 0,
      // Read from the backlog itself, so the count can never drift from what waits.
      get queued(): number {
        return backlog.size;
      },
    };
    this.sweeper = new RetentionSweeper(fs, root, options.retentionDays, clock, (result) => {
      for (const dir of result.touchedDirs) this.states.reset(dir);
      if (result.removedFiles > 0 || result.prunedDirs > 0) this.log("sweep", { removed: result.removedFiles, pruned: result.prunedDirs });
    }, (error) => this.fail("sweep", error));
    // A side directory's records hang from the main conversation: its reader resolves parents there.
    this.states = new SessionStates<DirState>(options.maxSessions, async (dir) =>
      dir.endsWith("/side") ? newDirState((await this.stateOf(dir.slice(0, -"/side".length))).lineage) : newDirState());
  }

  /** Adds a place every later commit also goes (a shared store built after the mirror, since it logs through it). */
  addSink(sink: CommitSink): void {
    this.sinks.push(sink);
  }

  /** Adds a listener told of every commit after its writes settled; it must return at once (it runs before the client's final event is released). */
  onCommitted(listener: (job: CommitJob) => void): void {
    this.committed.push(listener);
  }

  /** Starts mirroring one request, or null when it is not a Messages API call (SPEC §4: only those are mirrored). */
  begin(request: MirrorRequest): RequestMirror | null {
    if (request.method !== "POST" || request.pathname !== "/v1/messages") return null;
    return new RequestMirror(this, request, this.options.clock());
  }

  /** Writes one response's records to the tree (after any that wait for an earlier failure) and to every sink; never rejects. */
  commit(job: CommitJob): Promise<void> {
    this.stats.responses++;
    if (job.kind !== "complete") this.stats.interrupted++;
    const writes = this.sinks.map((sink) => this.track(sink.commit(job)));
    if (this.options.files !== false) writes.push(this.track(this.drain(this.dirOf(job).dir, job)));
    return Promise.all(writes).then(() => {
      for (const listener of this.committed) {
        try {
          listener(job);
        } catch (error) {
          this.fail("listener", error);
        }
      }
    });
  }

  /** The directory and uuid scope of a job's route. */
  private dirOf(job: CommitJob): { dir: string; scope: string; main: string } {
    const main = join(this.options.root, job.sessionDir);
    const { subpath, scope } = conversationOf(job.route, job.sessionDir, job.agentDir);
    return { dir: subpath === "" ? main : join(main, subpath), scope, main };
  }

  /** Writes a directory's waiting commits in order, then `job`; on failure keeps what is left (bounded) and retries later. */
  private async drain(dir: string, job: CommitJob | null): Promise<void> {
    await this.states.withIndex(dir, async (state) => {
      if (job !== null) {
        const dropped = this.backlog.push(dir, job);
        if (dropped > 0) {
          this.stats.dropped += dropped;
          this.log("drop", { dir: this.relative(dir), dropped: this.stats.dropped });
        }
      }
      for (let next = this.backlog.first(dir); next !== undefined; next = this.backlog.first(dir)) {
        try {
          await this.writeOne(dir, state, next);
        } catch (error) {
          this.states.reset(dir); // what reached the disk is unknown: read it again next time
          const attempt = this.backlog.attempts(dir) + 1;
          this.fail("append", error, { dir: this.relative(dir), queued: this.backlog.waiting(dir), attempt });
          this.alarms.writeFailed(dir, error, this.backlog.size);
          this.backlog.retryLater(dir, () => void this.track(this.drain(dir, null)));
          return;
        }
        this.backlog.done(dir);
      }
      if (this.backlog.size === 0) await this.allWritten();
    });
    this.sweeper.maybe();
  }

  /** Nothing waits any more: say so if writes had failed, and let go of replayed spool files. */
  private async allWritten(): Promise<void> {
    this.alarms.writesRecovered();
    if (this.spoolFiles.length === 0) return;
    const files = this.spoolFiles;
    this.spoolFiles = [];
    await this.spool.remove(files).catch((error) => this.fail("spool", error));
  }

  /**
   * Replays what earlier runs saved in the spools (call before serving): each commit is written like a
   * new one, in order; those that fail wait in memory, and their files are kept until they are written.
   */
  async replaySpool(): Promise<Replayed> {
    const found = await this.spool.load();
    if (found.malformed > 0) this.log("spool", { skipped: "malformed line", lines: found.malformed });
    for (const { dir, error } of found.unreadable) {
      this.fail("spool", error, { dir });
      this.options.stderr(`sessiontap: the spool at ${dir} could not be read (${describe(error)}); what it holds is replayed by a later start`);
    }
    if (found.files.length === 0) return { commits: 0, files: [], waiting: 0 };
    this.spoolFiles = found.files;
    // Only into the tree: the spool holds what the tree did not take (a store keeps its own spool).
    for (const job of found.jobs) await this.track(this.drain(this.dirOf(job).dir, job));
    this.stats.replayed += found.jobs.length;
    this.log("replay", { commits: found.jobs.length, files: found.files.length, waiting: this.backlog.size });
    if (this.backlog.size === 0) await this.allWritten();
    return { commits: found.jobs.length, files: found.files, waiting: this.backlog.size };
  }

  /** What is wrong now (health's problems), one short string each. */
  problems(): string[] {
    return this.alarms.problems(this.stats);
  }

  /** Writes one job and logs what it did. */
  private async writeOne(dir: string, state: DirState, job: CommitJob): Promise<void> {
    const { scope, main } = this.dirOf(job);
    const owner = { sessionId: job.base.sessionId, agentId: null };
    const mainLineage = job.route === "side" ? () => this.refreshed(main, owner) : null;
    const written = await writeJob(this.deps, dir, scope, state, job, mainLineage);
    for (const torn of written.repaired) {
      this.stats.repaired++;
      this.log("repair", { dir: this.relative(dir), moved: torn.file, bytes: torn.bytes });
    }
    if (written.result === null) return;
    this.stats.appends++;
    this.stats.records += written.records;
    this.stats.bytes += written.result.bytes;
    const file = written.result.path.slice(written.result.path.lastIndexOf("/") + 1);
    if (written.result.rotated) this.log("rotate", { dir: this.relative(dir), file });
    else if (written.result.created) this.log("open", { dir: this.relative(dir), file });
    this.log("append", { dir: this.relative(dir), route: job.route, kind: job.kind, records: written.records, bytes: written.result.bytes, file });
  }

  /** The main conversation's lineage, brought up to date with what any writer appended. */
  private async refreshed(dir: string, owner: { sessionId: string | null; agentId: null }): Promise<Lineage> {
    return await this.states.withIndex(dir, async (state) => {
      const info = await this.options.fs.lstat(dir);
      if (info === null) return state.lineage;
      const release = await this.locks.acquire(dir);
      try {
        await refresh(this.deps, dir, state, owner);
      } finally {
        await release();
      }
      return state.lineage;
    });
  }

  /** A directory's state (created on first use). */
  private stateOf(dir: string): Promise<DirState> {
    return this.states.withIndex(dir, async (state) => state);
  }

  /** Keeps a write's promise until it settles, for flush(). */
  private track(work: Promise<void>): Promise<void> {
    const settled = work.catch((error) => this.fail("mirror", error));
    this.pending.add(settled);
    void settled.finally(() => this.pending.delete(settled));
    return settled;
  }

  /** Records a request the mirror could not read (SPEC §5 "Bad input"): forwarded untouched, not mirrored. */
  skip(reason: string, fields: EventFields = {}): void {
    this.stats.skipped++;
    this.log("skip", { reason, ...fields });
  }

  /** A final event went to the client before its write finished. */
  late(): void {
    this.stats.late++;
    this.log("late", { late: this.stats.late });
  }

  /** Counts a failure and logs it once; a failure while following a response means that response is not mirrored. */
  fail(stage: string, error: unknown, fields: EventFields = {}): void {
    this.stats.errors++;
    if (stage === "prepare" || stage === "response" || stage === "stream") this.stats.unmirrored++;
    this.log("error", { stage, error: describe(error), ...fields });
  }

  /** Appends an event to the events log (never rejects). */
  log(action: string, fields: EventFields = {}): void {
    void this.events.log(action, fields);
  }

  /** Tries every backlog once more, then waits for writes in flight and the events log, at most `boundMs`. */
  async flush(boundMs: number): Promise<void> {
    for (const dir of this.backlog.keys()) void this.track(this.drain(dir, null));
    const sinks = this.sinks.map((sink) => sink.flush(boundMs));
    await settlesWithin(Promise.all([...this.pending, this.sweeper.settled(), ...sinks]).then(() => this.events.flush()), boundMs);
  }

  /**
   * Stopping: flushes (bounded), then saves what could not be written to the spool, so it is written at the
   * next start instead of being lost. Says what it did.
   */
  async stop(boundMs: number): Promise<Unwritten> {
    this.log("stop", {});
    await this.flush(boundMs);
    this.backlog.stopTimers();
    const left = this.backlog.all();
    if (left.length === 0) return { kind: "none" };
    try {
      const path = await this.spool.save(left);
      this.backlog.clear();
      // Those files' commits are in the new file now.
      await this.spool.remove(this.spoolFiles).catch((error) => this.fail("spool", error));
      this.log("unwritten", { commits: left.length, saved: true });
      await this.events.flush();
      return { kind: "saved", commits: left.length, path };
    } catch (error) {
      this.log("unwritten", { commits: left.length, saved: false, error: describe(error) });
      await this.events.flush();
      return { kind: "lost", commits: left.length, error: describe(error) };
    }
  }

  /** Runs the retention sweep if it is due (SPEC §4: within a minute of start, then at most once a minute). */
  maybeSweep(): void {
    this.sweeper.maybe();
  }

  /** Resolves when the sweep in progress (if any) is done. */
  sweepDone(): Promise<void> {
    return this.sweeper.settled();
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
