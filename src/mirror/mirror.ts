// The session mirror (docs/DESIGN.md "The mirror"): binds each commit to its session's owner, writes it to the tree, hands it to the store.
import { type CommitJob, placeOf } from "../protocol/commit-job.ts";
import type { Redactor } from "../protocol/secrets.ts";
import { dirName, judgeBinding, ownerName, type SessionBinding } from "../protocol/session-id.ts";
import { BindingFiles } from "../storage/binding-files.ts";
import { DirLocks, selfOwner } from "../storage/dir-lock.ts";
import { type EventFields, EventsLog } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { type AppendResult, type Cursor, MirrorTree } from "../storage/mirror-tree.ts";
import { MirrorSpool, rootSpoolDir, tempSpoolPlace } from "../storage/spool.ts";
import { sweepTree } from "../storage/sweep.ts";
import { basename, dirname, join } from "node:path/posix";
import { LRUCache } from "lru-cache";
import type { PgSink } from "../store/pg-sink.ts";
import { describe } from "../utils/describe-error.ts";
import { KeyedQueue } from "../utils/keyed-queue.ts";
import { settlesWithin } from "../utils/alarm.ts";
import { CommitWriter } from "../writer/commit-writer.ts";
import type { EngineSettings } from "./messages.ts";
import { COUNTED, type Counted, type CountedKind, MirrorAlarms } from "./problems.ts";

const BATCH_MAX = 64;

export interface MirrorDeps {
  fs: FsAdapter;
  clock: () => number;
  stderr: (line: string) => void;
  store: PgSink | null;
  /** With SESSIONTAP_REDACT=all, replaces the secrets of each record the tree gets. */
  redactor: Redactor | null;
}

/** Counters shown by /_tap/health (docs/DESIGN.md "Health and exit"), besides the failures problems.ts declares. */
const STATS = {
  responses: 0,
  appends: 0,
  records: 0,
  bytes: 0,
  interrupted: 0,
  replayed: 0,
};

/** `queued`: commits waiting in memory for a write to succeed. */
export type MirrorStats = typeof STATS & Record<CountedKind, number> & { readonly queued: number };

export type Unwritten =
  | { kind: "none" }
  | { kind: "saved"; commits: number; path: string }
  | { kind: "lost"; commits: number; error: string };

/** `waiting`: commits that still wait (writes failed); their files are kept until they are written. */
export type Replayed = { commits: number; files: string[]; waiting: number };

export class Mirror {
  readonly root: string;
  readonly events: EventsLog;
  readonly locks: DirLocks;
  readonly alarms: MirrorAlarms;
  readonly stats: MirrorStats;
  readonly writer: CommitWriter<Cursor, AppendResult>;
  readonly queue: KeyedQueue<CommitJob>;
  private readonly spool: MirrorSpool;
  private readonly tree: MirrorTree;
  private spoolFiles: string[] = [];
  private readonly pending = new Set<Promise<void>>();
  /** Told of each commit once it is written (the guard watches them). */
  committed: ((job: CommitJob) => void) | null = null;
  private readonly bindings: SessionBindings | null;
  private sweptAt = Number.NEGATIVE_INFINITY;
  private sweeping: Promise<void> | null = null;

  constructor(readonly settings: EngineSettings, readonly deps: MirrorDeps) {
    const { fs, clock } = deps;
    const root = (this.root = settings.mirrorDir);
    this.alarms = new MirrorAlarms(clock, deps.stderr);
    this.events = new EventsLog(fs, root, clock, {
      failed: (error) => this.alarms.raise("eventsLog", { path: this.events.path, error: describe(error) }),
      written: () => this.alarms.clear("eventsLog", { path: this.events.path }),
    });
    const self = selfOwner(fs);
    this.locks = new DirLocks(fs, root, {
      self,
      waitMs: settings.lockWaitMs,
      holder: settings.lockHolder,
      clock,
      report: {
        releaseFailed: (dir, error, waiting) => {
          this.fail("unlock", error, { dir: this.relative(dir) });
          this.alarms.raise("locks", { dir, error: describe(error), waiting });
        },
        allReleased: () => this.alarms.clear("locks"),
      },
    });
    const tree = (this.tree = new MirrorTree(fs, root, settings.maxBytes, clock, settings.sync ?? true, {
      locks: this.locks,
      repaired: (torn) => this.count("repaired", { dir: this.relative(torn.dir), moved: torn.file, bytes: torn.bytes }),
    }));
    const underRoot = rootSpoolDir(root);
    const places = [{ dir: underRoot, ensure: () => tree.ensureDir(underRoot) }, tempSpoolPlace(fs, root, settings.spoolTmpDir ?? undefined)];
    this.spool = new MirrorSpool(fs, places, self);
    this.writer = new CommitWriter(tree, settings.includeThinking, settings.maxSessions, deps.redactor);
    const queue = (this.queue = new KeyedQueue<CommitJob>((key, jobs) => this.writeSome(key, jobs), settings.maxQueued, clock, {
      dropped: (key, n) => this.count("dropped", { dir: key }, n),
      failed: (key, error, attempt) => {
        this.fail("append", error, { dir: key, queued: this.queue.waiting(key), attempt });
        this.alarms.raise("writes", { dir: join(root, key), error: describe(error), queued: this.queue.size });
      },
      empty: () => void this.track(this.allWritten()),
    }));
    const counted = Object.fromEntries(Object.keys(COUNTED).map((kind) => [kind, 0]));
    this.stats = Object.defineProperty({ ...STATS, ...counted }, "queued", { get: () => queue.size, enumerable: true }) as MirrorStats;
    this.bindings = settings.bindingKey === null ? null : new SessionBindings(this, new BindingFiles(fs, root), settings.bindingKey, settings.maxSessions * 4);
  }

  /** The retention sweep: lazily, at most once a minute while traffic flows, never two at once. */
  sweep(): Promise<void> {
    const now = this.deps.clock();
    const days = this.settings.retentionDays;
    if (days === 0 || this.sweeping !== null || now - this.sweptAt < 60_000) return this.sweeping ?? Promise.resolve();
    this.sweptAt = now;
    return this.sweeping = sweepTree(this.deps.fs, this.root, now - days * 86_400_000).then((result) => {
      for (const dir of result.touchedDirs) this.writer.reset(this.relative(dir));
      if (result.removedFiles > 0 || result.prunedDirs > 0) this.log("sweep", { removed: result.removedFiles, pruned: result.prunedDirs });
    }, (error) => this.fail("sweep", error)).finally(() => (this.sweeping = null));
  }

  commit(job: CommitJob): Promise<void> {
    this.stats.responses++;
    if (job.kind === "client-cut" || job.kind === "upstream-cut") this.stats.interrupted++;
    return this.track(this.queue.push(job.sessionDir, job));
  }

  /** The queue's step: judges the oldest commits, writes the leading run of one conversation in one append, then hands them to the store. */
  private async writeSome(key: string, jobs: readonly CommitJob[]): Promise<number> {
    const batch: CommitJob[] = [];
    let conversation: string | null = null;
    for (const job of jobs.slice(0, BATCH_MAX)) {
      const bound = this.bindings === null ? job : await this.bindings.resolve(job);
      const place = placeOf(bound.route, bound.sessionDir, bound.agentDir).key;
      if (bound.sessionDir !== key) {
        if (batch.length > 0) break;
        void this.track(this.queue.push(bound.sessionDir, bound)); // a borrowed id: a session of its own, in its own turn
        return 1;
      }
      if ((conversation ??= place) !== place) break;
      batch.push(bound);
    }
    if (this.deps.store === null || !this.settings.storeOnly) {
      const written = await this.writer.writeAll(batch);
      if (written.done !== null) this.written(batch.at(-1)!, written.records, written.done, batch.length);
    }
    for (const job of batch) {
      if (this.deps.store !== null) void this.track(this.deps.store.commit(job));
      try {
        this.committed?.(job);
      } catch (error) {
        this.fail("listener", error);
      }
    }
    return batch.length;
  }

  /** Starts the store and replays what earlier runs spooled, into the tree only (a store keeps its own spool); call before serving. */
  async start(): Promise<Replayed> {
    // What a writer killed mid-publish left in .staging goes first (docs/RELIABILITY.md "Trust boundaries").
    await this.tree.removeStaleStaging().then(
      (removed) => removed > 0 && this.log("cleanup", { dir: ".staging", removed }),
      (error) => this.fail("cleanup", error),
    );
    // The root's own directories and this process's name, made before the first answer: a fresh tap's first commit of a session
    // walked them under load for ~250 ms (docs/RELIABILITY.md "A fresh tap's first moments"); a failure here fails the first write too.
    await Promise.all([this.tree.prepare(), this.locks.prepare(), this.bindings?.files.prepare()]).catch((error) => this.fail("start", error));
    this.deps.store?.start();
    const found = await this.spool.load();
    if (found.malformed > 0) this.log("spool", { skipped: "malformed line", lines: found.malformed });
    for (const { dir, error } of found.unreadable) {
      this.fail("spool", error, { dir });
      this.deps.stderr(`sessiontap: the spool at ${dir} could not be read (${describe(error)}); what it holds is replayed by a later start`);
    }
    if (found.files.length === 0) return { commits: 0, files: [], waiting: 0 };
    this.spoolFiles = found.files;
    await Promise.all(found.jobs.map((job) => this.track(this.queue.push(job.sessionDir, job))));
    this.stats.replayed += found.jobs.length;
    this.log("replay", { commits: found.jobs.length, files: found.files.length, waiting: this.queue.size });
    if (this.queue.size === 0) await this.allWritten();
    return { commits: found.jobs.length, files: found.files, waiting: this.queue.size };
  }

  private async allWritten(): Promise<void> {
    this.alarms.clear("writes", { dir: this.root });
    const files = this.spoolFiles.splice(0);
    if (files.length > 0) await this.spool.remove(files).catch((error) => this.fail("spool", error));
  }

  private written(job: CommitJob, records: number, result: AppendResult, commits: number): void {
    this.stats.appends++;
    this.stats.records += records;
    this.stats.bytes += result.bytes;
    const dir = this.relative(dirname(result.path));
    const file = basename(result.path);
    if (result.rotated) this.log("rotate", { dir, file });
    else if (result.created) this.log("open", { dir, file });
    this.log("append", { dir, route: job.route, kind: job.kind, records, bytes: result.bytes, file, ...(commits > 1 && { commits }) });
    void this.sweep();
  }

  private track(work: Promise<void>): Promise<void> {
    const settled = work.catch((error) => this.fail("mirror", error));
    this.pending.add(settled);
    void settled.finally(() => this.pending.delete(settled));
    return settled;
  }

  count(kind: CountedKind, fields: EventFields = {}, by = 1): void {
    const n = (this.stats[kind] += by);
    const { action, said }: Counted = COUNTED[kind];
    if (action !== undefined) this.log(action, { ...fields, [kind]: n });
    if (said !== undefined) this.alarms.get(kind).fail(kind, (first) => said(first, n, fields));
  }

  /** A failure while following a response means that response is not mirrored. */
  fail(stage: string, error: unknown, fields: EventFields = {}): void {
    if (stage === "prepare" || stage === "response" || stage === "stream") this.count("failedResponses");
    this.count("errors", { stage, error: describe(error), ...fields });
  }

  log(action: string, fields: EventFields = {}): void {
    void this.events.log(action, fields);
  }

  /** Tries every waiting commit once more, then waits for writes in flight and the events log, at most `boundMs`. */
  async flush(boundMs: number): Promise<void> {
    void this.track(this.queue.flush());
    const store = this.deps.store?.flush(boundMs);
    const settled = async () => {
      // A write may queue another (a borrowed id's commit goes to its own session): wait until none is left in flight.
      for (let rounds = 0; this.pending.size > 0 && rounds < 100; rounds++) await Promise.all([...this.pending]);
      await Promise.all([this.sweeping, store]);
      await this.events.flush();
    };
    await settlesWithin(settled(), boundMs);
  }

  async stop(boundMs: number): Promise<Unwritten> {
    this.log("stop", {});
    await this.flush(boundMs);
    const unwritten = await this.saveUnwritten();
    await this.deps.store?.close();
    await this.locks.stop();
    await this.events.flush();
    return unwritten;
  }

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

  private relative(dir: string): string {
    return dir.startsWith(this.root) ? dir.slice(this.root.length).replace(/^\/+/, "") : dir;
  }
}

// Binds each session before anything is appended to it (docs/DESIGN.md "Who a session belongs to"): to its first request's credential
// fingerprint and cwd; a later request of another owner with that id goes to a session of its own.
class SessionBindings {
  private readonly known: LRUCache<string, SessionBinding>;
  /** A retried write is not judged twice. */
  private readonly judged = new WeakMap<CommitJob, CommitJob>();

  constructor(
    private readonly mirror: Mirror,
    readonly files: BindingFiles,
    private readonly secret: string,
    max: number,
  ) {
    this.known = new LRUCache({ max });
  }

  /** Its session's own job, or one given a session of its own; a binding that cannot be read or kept is counted, and the job written as it came. */
  async resolve(job: CommitJob): Promise<CommitJob> {
    let bound = this.judged.get(job);
    if (bound !== undefined || job.base.sessionId === null || job.owner === undefined) return bound ?? job;
    bound = await this.judge(job).catch((error) => {
      this.mirror.fail("binding", error, { dir: job.sessionDir });
      return job;
    });
    this.judged.set(job, bound).set(bound, bound);
    return bound;
  }

  private async judge(job: CommitJob): Promise<CommitJob> {
    const dir = job.sessionDir;
    const request: SessionBinding = { credential: job.owner!.credential, claims: job.owner!.claims, cwd: job.base.cwd ?? null };
    const binding = this.known.get(dir) ?? (await this.files.read(dir));
    if (binding === null) {
      let created: boolean;
      try {
        created = await this.files.create(dir, request);
      } catch (error) {
        // Not kept on disk (it is said): this process still holds the session to its first owner.
        this.mirror.fail("binding", error, { dir });
        created = true;
      }
      if (created) {
        this.known.set(dir, request);
        return job;
      }
      this.known.delete(dir); // another writer bound it first: judge against theirs
      return await this.judge(job);
    }
    const verdict = judgeBinding(binding, request);
    if (verdict.same) {
      if (verdict.next !== null) await this.files.replace(dir, verdict.next);
      this.known.set(dir, verdict.next ?? binding);
      return job;
    }
    const ownId = `${job.base.sessionId}-from-${ownerName(this.secret, request.credential, request.cwd)}`;
    const ownDir = dirName(ownId);
    this.mirror.count("borrowed", { dir, as: ownDir, why: verdict.why, route: job.route });
    // The session of its own is bound like any other: to this request's owner.
    return await this.resolve({ ...job, sessionDir: ownDir, base: { ...job.base, sessionId: ownId }, split: true });
  }
}
