// The session mirror (docs/DESIGN.md "The mirror"): writes each commit to the tree and to the shared store, and tells listeners once it is written.
import { type CommitJob, placeOf } from "../protocol/commit-job.ts";
import type { Redactor } from "../protocol/secrets.ts";
import { DirLocks } from "../storage/dir-lock.ts";
import { type EventFields, EventsLog } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { type AppendResult, type Cursor, MirrorTree } from "../storage/mirror-tree.ts";
import { MirrorSpool, rootSpoolDir, type SpoolPlace, tempSpoolPlace } from "../storage/spool.ts";
import { join } from "node:path/posix";
import { ownerAlive, selfOwner } from "../storage/process-identity.ts";
import type { PgSink } from "../store/pg-sink.ts";
import { describe } from "../utils/describe-error.ts";
import { settlesWithin } from "../utils/within.ts";
import { CommitWriter } from "../writer/commit-writer.ts";
import { KeyedQueue } from "../utils/keyed-queue.ts";
import { MirrorAlarms } from "./mirror-alarms.ts";
import { type SweepResult, sweepTree } from "../storage/sweep.ts";
import { SessionBindings } from "./session-bindings.ts";
import { BindingFiles } from "../storage/binding-files.ts";

/** Most commits of one conversation written in one append. */
const BATCH_MAX = 64;

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
  /** The shared store every commit also goes to, or null. */
  store: PgSink | null;
  /** Write the local tree (default true; false when a store replaces it). */
  files?: boolean;
  /** Where unwritten commits go at shutdown when the root refuses them (default: under the system temp dir). */
  tempSpool?: SpoolPlace;
  /** The root's secret: with it, each session is bound to its owner before anything is appended (session-bindings.ts). */
  bindingKey?: string | null;
  lockHolder?: string;
  /** With SESSIONTAP_REDACT=all, replaces the secrets of each record the tree gets. */
  redactor?: Redactor | null;
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
  failedResponses: number;
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
  readonly events: EventsLog;
  readonly locks: DirLocks;
  readonly alarms: MirrorAlarms;
  readonly stats: MirrorStats;
  /** The tree's commit writer (its conversations in memory). */
  readonly writer: CommitWriter<Cursor, AppendResult>;
  private readonly spool: MirrorSpool;
  /** Commits of the tree waiting for a write to succeed, per conversation. */
  readonly queue: KeyedQueue<CommitJob>;
  /** Each job as its session's binding judged it (a retried write is not judged twice). */
  private readonly judged = new WeakMap<CommitJob, CommitJob>();
  /** The drain running for each conversation (one at a time keeps its commits in order). */
  /** Spool files replayed at start whose commits are not all written yet. */
  private spoolFiles: string[] = [];
  private readonly pending = new Set<Promise<void>>();
  /** The retention sweep (docs/DESIGN.md "The mirror": within a minute of start, then at most once a minute). */
  readonly sweeper: RetentionSweeper;
  /** Told of each commit once its writes settled (the guard). */
  private readonly committed: ((job: CommitJob) => void)[] = [];
  /** Who each session belongs to, when sessions are bound (a binding key was given). */
  private readonly bindings: SessionBindings | null;
  /** The tree the mirror writes. */
  private readonly tree: MirrorTree;

  constructor(readonly options: MirrorOptions) {
    const { fs, root, clock } = options;
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
      holder: options.lockHolder,
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
    const tree = (this.tree = new MirrorTree(fs, root, options.maxBytes, clock, options.sync ?? true, {
      locks: this.locks,
      repaired: (torn) => {
        this.stats.repaired++;
        this.log("repair", { dir: this.relative(torn.dir), moved: torn.file, bytes: torn.bytes });
      },
    }));
    const underRoot = rootSpoolDir(root);
    this.spool = new MirrorSpool(fs, [{ dir: underRoot, ensure: () => tree.ensureDir(underRoot) }, options.tempSpool ?? tempSpoolPlace(fs, root)], self);
    this.writer = new CommitWriter(tree, options.includeThinking, options.maxSessions, options.redactor);
    const queue = (this.queue = new KeyedQueue<CommitJob>((key, jobs) => this.writeSome(key, jobs), options.maxQueued ?? 1000, clock, {
      dropped: (key, n) => {
        this.stats.dropped += n;
        this.log("drop", { dir: key, dropped: this.stats.dropped });
      },
      failed: (key, error, attempt) => {
        this.fail("append", error, { dir: key, queued: this.queue.waiting(key), attempt });
        this.alarms.writeFailed(join(this.options.root, key), error, this.queue.size);
      },
      empty: () => void this.track(this.allWritten()),
    }));
    const stats = { responses: 0, appends: 0, records: 0, bytes: 0, interrupted: 0, skipped: 0, errors: 0, dropped: 0, repaired: 0, failedResponses: 0 };
    // `queued` is read from the queue itself, so the count can never drift from what waits.
    const queued = { get: () => queue.size, enumerable: true };
    this.stats = Object.defineProperty({ ...stats, replayed: 0, gaveUp: 0, truncated: 0, borrowed: 0 }, "queued", queued) as MirrorStats;
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

  /** Adds a listener told of every commit after its writes settled; it must return at once (it runs on the engine's write path). */
  onCommitted(listener: (job: CommitJob) => void): void {
    this.committed.push(listener);
  }

  /** Queues one response's commit on its session (judged there first, when sessions are bound); never rejects. */
  commit(job: CommitJob): Promise<void> {
    this.stats.responses++;
    if (job.kind === "client-cut" || job.kind === "upstream-cut") this.stats.interrupted++;
    return this.track(this.queue.push(job.sessionDir, job));
  }

  /**
   * The one step of the queue for a session: judges its oldest commits, writes the leading run of one conversation in one append
   * (docs/DESIGN.md "Writes": at most BATCH_MAX) and only then hands them to the store's spool; resolves with how many it took.
   */
  private async writeSome(key: string, jobs: readonly CommitJob[]): Promise<number> {
    const batch: CommitJob[] = [];
    let conversation: string | null = null;
    for (const job of jobs.slice(0, BATCH_MAX)) {
      const bound = await this.bound(job);
      const place = placeOf(bound.route, bound.sessionDir, bound.agentDir).key;
      if (bound.sessionDir !== key) {
        if (batch.length > 0) break;
        this.judged.set(bound, bound);
        void this.track(this.queue.push(bound.sessionDir, bound)); // a borrowed id: a session of its own, in its own turn
        return 1;
      }
      if ((conversation ??= place) !== place) break;
      batch.push(bound);
    }
    if (this.options.files !== false) {
      const written = await this.writer.writeAll(batch);
      if (written.done !== null) this.written(batch.at(-1)!, written.records, written.done, batch.length);
    }
    for (const job of batch) {
      if (this.options.store !== null) void this.track(this.options.store.commit(job));
      for (const listener of this.committed) {
        try {
          listener(job);
        } catch (error) {
          this.fail("listener", error);
        }
      }
    }
    return batch.length;
  }

  private async bound(job: CommitJob): Promise<CommitJob> {
    if (this.bindings === null) return job;
    let bound = this.judged.get(job);
    if (bound === undefined) this.judged.set(job, bound = await this.bindings.resolve(job));
    return bound;
  }

  /**
   * Starts the store and replays what earlier runs saved in the tree's spools (call before serving): each
   * commit is written like a new one, in order, into the tree only (a store keeps its own spool); those
   * that fail wait in memory, and their files are kept until they are written.
   */
  async start(): Promise<Replayed> {
    // What a writer killed mid-publish left in .staging goes first (docs/RELIABILITY.md "Trust boundaries").
    await this.tree.removeStaleStaging().then(
      (removed) => removed > 0 && this.log("cleanup", { dir: ".staging", removed }),
      (error) => this.fail("cleanup", error),
    );
    // The root's own directories and this process's name, made before the first answer: a fresh tap's first commit of a session
    // walked them under load for ~250 ms (docs/RELIABILITY.md "A fresh tap's first moments"); a failure here fails the first write too.
    await Promise.all([this.tree.prepare(), this.locks.prepare(), this.bindings?.files.prepare()]).catch((error) => this.fail("start", error));
    this.options.store?.start();
    const found = await this.spool.load();
    if (found.malformed > 0) this.log("spool", { skipped: "malformed line", lines: found.malformed });
    for (const { dir, error } of found.unreadable) {
      this.fail("spool", error, { dir });
      this.options.stderr(`sessiontap: the spool at ${dir} could not be read (${describe(error)}); what it holds is replayed by a later start`);
    }
    if (found.files.length === 0) return { commits: 0, files: [], waiting: 0 };
    this.spoolFiles = found.files;
    await Promise.all(found.jobs.map((job) => this.track(this.queue.push(job.sessionDir, job))));
    this.stats.replayed += found.jobs.length;
    this.log("replay", { commits: found.jobs.length, files: found.files.length, waiting: this.queue.size });
    if (this.queue.size === 0) await this.allWritten();
    return { commits: found.jobs.length, files: found.files, waiting: this.queue.size };
  }

  /** Nothing waits any more: say so, and let go of replayed spool files. */
  private async allWritten(): Promise<void> {
    this.alarms.writesRecovered();
    if (this.spoolFiles.length === 0) return;
    const files = this.spoolFiles;
    this.spoolFiles = [];
    await this.spool.remove(files).catch((error) => this.fail("spool", error));
  }

  /** Counts and logs one append to the tree (of `commits` commits, the last `job`). */
  private written(job: CommitJob, records: number, result: AppendResult, commits: number): void {
    this.stats.appends++;
    this.stats.records += records;
    this.stats.bytes += result.bytes;
    const dir = this.relative(result.path.slice(0, result.path.lastIndexOf("/")));
    const file = result.path.slice(result.path.lastIndexOf("/") + 1);
    if (result.rotated) this.log("rotate", { dir, file });
    else if (result.created) this.log("open", { dir, file });
    this.log("append", { dir, route: job.route, kind: job.kind, records, bytes: result.bytes, file, ...(commits > 1 && { commits }) });
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
    if (stage === "prepare" || stage === "response" || stage === "stream") this.stats.failedResponses++;
    this.log("error", { stage, error: describe(error), ...fields });
  }

  /** Appends an event to the events log (never rejects). */
  log(action: string, fields: EventFields = {}): void {
    void this.events.log(action, fields);
  }

  /** Tries every waiting commit once more, then waits for writes in flight and the events log, at most `boundMs`. */
  async flush(boundMs: number): Promise<void> {
    void this.track(this.queue.flush());
    const store = this.options.store?.flush(boundMs);
    const settled = async () => {
      // A write may queue another (a borrowed id's commit goes to its own session): wait until none is left in flight.
      for (let rounds = 0; this.pending.size > 0 && rounds < 100; rounds++) await Promise.all([...this.pending]);
      await Promise.all([this.sweeper.settled(), store]);
      await this.events.flush();
    };
    await settlesWithin(settled(), boundMs);
  }

  /**
   * Stopping: flushes (bounded), then saves what could not be written to the spool, so it is written at the
   * next start instead of being lost, and closes the store. Says what it did.
   */
  async stop(boundMs: number): Promise<Unwritten> {
    this.log("stop", {});
    await this.flush(boundMs);
    const unwritten = await this.saveUnwritten();
    await this.options.store?.close();
    await this.locks.stop();
    await this.events.flush();
    return unwritten;
  }

  /** Stops retrying and saves what still waits, so the next start writes it. */
  private async saveUnwritten(): Promise<Unwritten> {
    const left = this.queue.stop();
    if (left.length === 0) return { kind: "none" };
    try {
      const path = await this.spool.save(left);
      // Those files' commits are in the new file now.
      await this.spool.remove(this.spoolFiles).catch((error) => this.fail("spool", error));
      this.log("unwritten", { commits: left.length, saved: true });
      return { kind: "saved", commits: left.length, path };
    } catch (error) {
      this.log("unwritten", { commits: left.length, saved: false, error: describe(error) });
      return { kind: "lost", commits: left.length, error: describe(error) };
    }
  }

  /** A directory relative to the root, for the events log. */
  private relative(dir: string): string {
    return dir.startsWith(this.options.root) ? dir.slice(this.options.root.length).replace(/^\/+/, "") : dir;
  }
}

// The retention sweep (docs/DESIGN.md "The mirror"): lazily, at most once a minute while traffic flows, never two at once.
const SWEEP_EVERY_MS = 60_000;

/** Throttles the sweep of one root. */
export class RetentionSweeper {
  private last = Number.NEGATIVE_INFINITY;
  private running: Promise<void> | null = null;

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    private readonly days: number,
    private readonly clock: () => number,
    private readonly done: (result: SweepResult) => void,
    private readonly failed: (error: unknown) => void,
  ) {}

  /** Starts a sweep if retention is on, none runs, and a minute passed since the last one. */
  maybe(): void {
    const now = this.clock();
    if (this.days === 0 || this.running !== null || now - this.last < SWEEP_EVERY_MS) return;
    this.last = now;
    this.running = sweepTree(this.fs, this.root, now - this.days * 86_400_000)
      .then(this.done, this.failed)
      .finally(() => (this.running = null));
  }

  /** Resolves when the sweep in progress (if any) is done. */
  settled(): Promise<void> {
    return this.running ?? Promise.resolve();
  }
}
