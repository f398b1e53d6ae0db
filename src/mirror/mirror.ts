/**
 * The session mirror (docs/DESIGN.md "The mirror"): hands each commit to the tree (tree-writes.ts) and
 * to every other place commits go (a shared store), and tells listeners once it is written. Never throws
 * into the client path: every failure is one events-log line and a count, said on stderr and listed as a
 * health problem (mirror-alarms.ts).
 */
import { DirLocks } from "../storage/dir-lock.ts";
import { describe, type EventFields, EventsLog } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { type AppendResult, type Cursor, MirrorTree } from "../storage/mirror-tree.ts";
import { MirrorSpool, rootSpoolDir, tempSpoolPlace } from "../storage/mirror-spool.ts";
import { ownerAlive, selfOwner } from "../storage/process-identity.ts";
import { MirrorAlarms } from "./mirror-alarms.ts";
import { CommitWriter } from "../writer/commit-writer.ts";
import { TreeTarget } from "../writer/tree-target.ts";
import type { CommitJob } from "../protocol/commit-job.ts";
import type { CommitSink } from "../writer/commit-sink.ts";
import { RetentionSweeper } from "./retention.ts";
import { SessionBindings } from "./session-bindings.ts";
import { BindingFiles } from "../storage/binding-files.ts";
import { type Replayed, TreeWrites, type Unwritten } from "./tree-writes.ts";
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
  /** The root's secret: with it, each session is bound to its owner before anything is appended (session-bindings.ts). */
  bindingKey?: string | null;
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
   * Answers the mirror gave up on before they were whole: its engine had fallen too far behind the relay
   * (docs/DESIGN.md "Off the relay path"). Their requests are kept; the next request's history brings the
   * answer, reconstructed.
   */
  gaveUp: number;
  /** Answers kept only in part: they grew past SESSIONTAP_MAX_MESSAGE_BYTES (marked sessiontap_truncated). */
  truncated: number;
  /**
   * Requests that carried a session id bound to another owner (another credential or working directory):
   * mirrored as a session of their own, never as a branch of that one.
   */
  borrowed: number;
}

export type { Replayed, Unwritten };

/** The mirror of one root directory. */
export class Mirror {
  readonly tree: MirrorTree;
  readonly events: EventsLog;
  readonly locks: DirLocks;
  readonly stats: MirrorStats;
  private readonly writer: CommitWriter<Cursor, AppendResult>;
  private readonly writes: TreeWrites;
  private readonly pending = new Set<Promise<void>>();
  private readonly sweeper: RetentionSweeper;
  readonly alarms: MirrorAlarms;
  private readonly sinks: CommitSink[];
  /** Told of each commit once its writes settled (the guard). */
  private readonly committed: ((job: CommitJob) => void)[] = [];
  /** Who each session belongs to, when sessions are bound (a binding key was given). */
  private readonly bindings: SessionBindings | null;

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
      self,
      isAlive: (owner) => ownerAlive(fs, owner),
      waitMs: options.lockWaitMs ?? 2000,
      clock,
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      report: {
        releaseFailed: (dir, error, waiting) => {
          this.fail("unlock", error, { dir: this.relative(dir) });
          this.alarms.lockReleaseFailed(dir, error, waiting);
        },
        allReleased: () => this.alarms.locksReleased(),
      },
    });
    const underRoot = rootSpoolDir(root);
    const spool = new MirrorSpool(fs, [{ dir: underRoot, ensure: () => this.tree.ensureDir(underRoot) }, options.tempSpool ?? tempSpoolPlace(fs, root)], self);
    const target = new TreeTarget(this.tree, this.locks, (torn) => {
      this.stats.repaired++;
      this.log("repair", { dir: this.relative(torn.dir), moved: torn.file, bytes: torn.bytes });
    });
    this.writer = new CommitWriter(target, options.includeThinking, options.maxSessions);
    const writes = (this.writes = new TreeWrites(this.writer, spool, options.maxQueued ?? 1000, {
      log: (action, fields) => this.log(action, fields),
      fail: (stage, error, fields) => this.fail(stage, error, fields),
      written: (job, records, result) => this.written(job, records, result),
      dropped: (key, count) => {
        this.stats.dropped += count;
        this.log("drop", { dir: key, dropped: this.stats.dropped });
      },
      writeFailed: (key, error, queued) => this.alarms.writeFailed(join(root, key), error, queued),
      allWritten: () => this.alarms.writesRecovered(),
      track: (work) => this.track(work),
    }, clock));
    this.stats = {
      responses: 0,
      appends: 0,
      records: 0,
      bytes: 0,
      interrupted: 0,
      skipped: 0,
      errors: 0,
      dropped: 0,
      repaired: 0,
      unmirrored: 0,
      replayed: 0,
      gaveUp: 0,
      truncated: 0,
      borrowed: 0,
      // Read from the backlog itself, so the count can never drift from what waits.
      get queued(): number {
        return writes.queued;
      },
    };
    this.bindings = options.bindingKey == null ? null : new SessionBindings(new BindingFiles(fs, root), options.bindingKey, {
      log: (action, fields) => this.log(action, fields),
      fail: (stage, error, fields) => this.fail(stage, error, fields),
      split: (dir, as, why) => {
        this.stats.borrowed++;
        this.alarms.borrowed(dir, as, why, this.stats.borrowed);
      },
    }, options.maxSessions * 4);
    this.sweeper = new RetentionSweeper(fs, root, options.retentionDays, clock, (result) => {
      for (const dir of result.touchedDirs) this.writer.reset(this.relative(dir));
      if (result.removedFiles > 0 || result.prunedDirs > 0) this.log("sweep", { removed: result.removedFiles, pruned: result.prunedDirs });
    }, (error) => this.fail("sweep", error));
  }

  /** Adds a place every later commit also goes (a shared store built after the mirror, since it logs through it). */
  addSink(sink: CommitSink): void {
    this.sinks.push(sink);
  }

  /** Adds a listener told of every commit after its writes settled; it must return at once (it runs on the engine's write path). */
  onCommitted(listener: (job: CommitJob) => void): void {
    this.committed.push(listener);
  }

  /**
   * Writes one response's records to the tree (after any that wait for an earlier failure) and to every
   * sink, once its session's owner is judged (a borrowed session id gets a session of its own); never rejects.
   */
  commit(job: CommitJob): Promise<void> {
    this.stats.responses++;
    if (job.kind === "client-cut" || job.kind === "upstream-cut") this.stats.interrupted++;
    if (this.bindings === null) return this.write(job);
    return this.track(this.bindings.resolve(job).then((bound) => this.write(bound)));
  }

  /** Hands a judged commit to the tree and every sink, then tells the listeners. */
  private write(job: CommitJob): Promise<void> {
    const writes = this.sinks.map((sink) => this.track(sink.commit(job)));
    if (this.options.files !== false) writes.push(this.track(this.writes.write(job)));
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

  /**
   * Replays what earlier runs saved in the spools (call before serving), into the tree only: the spool
   * holds what the tree did not take (a store keeps its own spool).
   */
  async replaySpool(): Promise<Replayed> {
    // What a writer killed mid-publish left in .staging goes first (docs/RELIABILITY.md "Trust boundaries").
    await this.tree.removeStaleStaging().then(
      (removed) => removed > 0 && this.log("cleanup", { dir: ".staging", removed }),
      (error) => this.fail("cleanup", error),
    );
    const replayed = await this.writes.replay((dir, error) => {
      this.fail("spool", error, { dir });
      this.options.stderr(`sessiontap: the spool at ${dir} could not be read (${describe(error)}); what it holds is replayed by a later start`);
    });
    this.stats.replayed += replayed.commits;
    return replayed;
  }

  /** What is wrong now (health's problems), one short string each. */
  problems(): string[] {
    return this.alarms.problems({ ...this.stats, unreleasedLocks: this.locks.waiting, longestWaitMs: this.writes.longestWaitMs });
  }

  /** Counts and logs one commit written to the tree. */
  private written(job: CommitJob, records: number, result: AppendResult): void {
    this.stats.appends++;
    this.stats.records += records;
    this.stats.bytes += result.bytes;
    const dir = this.relative(result.path.slice(0, result.path.lastIndexOf("/")));
    const file = result.path.slice(result.path.lastIndexOf("/") + 1);
    if (result.rotated) this.log("rotate", { dir, file });
    else if (result.created) this.log("open", { dir, file });
    this.log("append", { dir, route: job.route, kind: job.kind, records, bytes: result.bytes, file });
    this.sweeper.maybe(); // lazily, at most once a minute while traffic flows
  }

  /** Keeps a write's promise until it settles, for flush(). */
  private track(work: Promise<void>): Promise<void> {
    const settled = work.catch((error) => this.fail("mirror", error));
    this.pending.add(settled);
    void settled.finally(() => this.pending.delete(settled));
    return settled;
  }

  /** Records a request the mirror could not read (docs/DESIGN.md "Bad input"): forwarded untouched, not mirrored. */
  skip(reason: string, fields: EventFields = {}): void {
    this.stats.skipped++;
    this.log("skip", { reason, ...fields });
  }

  /** An answer larger than SESSIONTAP_MAX_MESSAGE_BYTES was kept only in part, marked (docs/RELIABILITY.md "Trust boundaries"). */
  truncated(fields: EventFields): void {
    this.stats.truncated++;
    this.log("truncated", fields);
  }

  /** The relay stopped copying an answer before it was whole: its engine was too far behind (counted, logged). */
  gaveUp(fields: EventFields): void {
    this.stats.gaveUp++;
    this.alarms.gaveUp(String(fields.dir ?? "?"), this.stats.gaveUp);
    this.log("give-up", { reason: "the mirror engine fell behind the relay", ...fields, gaveUp: this.stats.gaveUp });
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
    this.writes.retryAll();
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
    const unwritten = await this.writes.saveUnwritten();
    await this.locks.stop();
    await this.events.flush();
    return unwritten;
  }

  /** Runs the retention sweep if it is due (docs/DESIGN.md "The mirror": within a minute of start, then at most once a minute). */
  maybeSweep(): void {
    this.sweeper.maybe();
  }

  /** Resolves when the sweep in progress (if any) is done. */
  sweepDone(): Promise<void> {
    return this.sweeper.settled();
  }

  /** Conversations held in memory. */
  get sessionsInMemory(): number {
    return this.writer.size;
  }

  /** A directory relative to the root, for the events log. */
  private relative(dir: string): string {
    return dir.startsWith(this.options.root) ? dir.slice(this.options.root.length).replace(/^\/+/, "") : dir;
  }
}
