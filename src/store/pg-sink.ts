// The shared PostgreSQL store (docs/DESIGN.md "The shared store"): every commit is appended to the store's queue on disk (pg-spool.ts), and one drain writes
// the queue to PostgreSQL in order, one transaction per commit (pg-target.ts).
import type { EventFields } from "../storage/events-log.ts";
import { describe } from "../utils/describe-error.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { selfOwner } from "../storage/process-identity.ts";
import { type CommitJob, placeOf } from "../protocol/commit-job.ts";
import type { Redactor } from "../protocol/secrets.ts";
import { bounded, closeStore, configurationProblem, isJobError, migrate, openStore, redactUrl, schemaVersion, type Sql } from "./pg-client.ts";
import { Alarm } from "../utils/alarm.ts";
import { PgSpool } from "./pg-spool.ts";
import { PgTarget, type StoreDone } from "./pg-target.ts";
import { CommitWriter } from "../writer/commit-writer.ts";
import { join } from "node:path/posix";
import { settlesWithin } from "../utils/within.ts";
import { Retry } from "../utils/keyed-queue.ts";

/** How the sink is set up. */
export interface PgSinkOptions {
  /** The store: a postgres:// or postgresql:// URL. */
  url: string;
  fs: FsAdapter;
  /** The mirror root; the queue lives in `<root>/.spool/postgres/`. */
  root: string;
  includeThinking: boolean;
  /** Replaces the secrets of each record written (docs/DESIGN.md "Secrets"), or null. */
  redactor?: Redactor | null;
  /** Conversations whose lineage is kept in memory (LRU). */
  maxSessions: number;
  /** Appends a line to the events log (ids, counts, states; never content or credentials). */
  log: (action: string, fields?: EventFields) => void;
  /** Migrate the schema at start when it is absent or older (default true). */
  migrate?: boolean;
  /** Longest transaction before its outcome counts as unknown and it is tried again (default 10,000 ms). */
  commitTimeoutMs?: number;
  /** Seconds to wait for a connection (default 5). */
  connectTimeoutS?: number;
  /** Reconnect backoff: the first wait, doubled up to the longest (defaults 250 ms and 10,000 ms). */
  retryMinMs?: number;
  retryMaxMs?: number;
  stderr?: (line: string) => void;
  clock?: () => number;
}

/** Most commits of one conversation written in one transaction. */
const BATCH_MAX = 64;
const keyOf = (job: CommitJob) => placeOf(job.route, job.sessionDir, job.agentDir).key;

/** How often a store refused for its settings is tried again. */
const CONFIG_RETRY_MS = 60_000;

/** What /_tap/health shows of the store. */
export interface StoreHealth {
  status: "starting" | "ok" | "unreachable" | "misconfigured";
  /** Commits in the queue, not yet in the store. */
  spooled: number;
  /** The store's URL without its password. */
  store: string;
  /** The schema version found, once connected. */
  schema: number | null;
  commits: number;
  /** Rows inserted. */
  records: number;
  /** Planned rows the store already had (by uuid), so not inserted again. */
  conflicts: number;
  /** Commits written once the store was usable again (they waited in the queue through an outage or a restart). */
  replayed: number;
  /** Commits the store refused for good, kept in the queue's failed-*.jsonl. */
  setAside: number;
  /** Commits that could not be queued either: not in the store. */
  dropped: number;
  errors: number;
  /** Errors thrown by the store's client from its own callbacks: the client was replaced. */
  driverErrors: number;
  lastError: string | null;
  /** Why the store refuses every connection for a reason of its settings (a role, a password, a database), or null. */
  misconfigured: string | null;
  conversationsInMemory: number;
}

/** The store sink (see the module comment). */
export class PgSink {
  private sql: Sql;
  readonly spool: PgSpool;
  private readonly writer: CommitWriter<bigint, StoreDone>;
  private status: StoreHealth["status"] = "starting";
  private readonly counts = { commits: 0, records: 0, conflicts: 0, replayed: 0, setAside: 0, dropped: 0, errors: 0, driverErrors: 0 };
  private lastError: string | null = null;
  private schema: number | null = null;
  private readonly retry: Retry;
  /** The drain under way, and whether a commit arrived since it last looked. */
  private draining: Promise<void> | null = null;
  private again = false;
  private closed = false;
  /** The store could not be reached, or refused us for its settings: each said once, then at most once a minute, and when it is back. */
  private readonly reach: Alarm;
  private readonly settings: Alarm;
  private misconfigured: string | null = null;

  constructor(private readonly options: PgSinkOptions) {
    this.retry = new Retry(options.retryMinMs ?? 250, options.retryMaxMs ?? 10_000);
    const clock = options.clock ?? Date.now;
    const stderr = options.stderr ?? (() => {});
    this.reach = new Alarm(clock, stderr);
    this.settings = new Alarm(clock, stderr);
    this.sql = openStore(options.url, { connectTimeoutS: options.connectTimeoutS });
    // Twice the sessions: each may have a side conversation beside its main one.
    this.writer = new CommitWriter(new PgTarget(() => this.sql), options.includeThinking, options.maxSessions * 2, options.redactor);
    this.spool = new PgSpool(options.fs, join(options.root, ".spool", "postgres"), selfOwner(options.fs), {
      malformed: (file, at) => options.log("store-spool", { skipped: "malformed line", file, at }),
      adopted: (file, jobs) => options.log("store-spool", { adopted: file, jobs }),
      refused: (error) => options.log("store-error", { stage: "spool", error: describe(error) }),
    }, options.root);
  }

  /** Connects, migrates when safe and writes what the queue holds (a dead tap's too), in the background. */
  start(): void {
    this.kick();
  }

  /** Queues one response's records; resolves once they are on disk (or counted as dropped), never rejects. */
  async commit(job: CommitJob): Promise<void> {
    this.counts.commits++;
    try {
      await this.spool.append(job);
    } catch (error) {
      this.counts.dropped++;
      this.options.log("store-error", { stage: "spool", error: describe(error), session: job.sessionDir, dropped: this.counts.dropped });
      return;
    }
    this.kick();
  }

  /**
   * The store's client threw from a callback of its own, which no await of ours could catch (postgres.js writes on a
   * socket already closed: porsager/postgres#1208): its connections are not to be trusted, so it is replaced; what was
   * in flight is still queued and written again, planned against what the store holds.
   */
  driverFailed(error: unknown): void {
    this.counts.driverErrors++;
    this.counts.errors++;
    this.lastError = describe(error);
    this.options.log("store-error", { stage: "driver", error: this.lastError, replaced: true });
    const old = this.sql;
    this.sql = openStore(this.options.url, { connectTimeoutS: this.options.connectTimeoutS });
    void closeStore(old, 0);
  }

  /** Starts a drain, unless one runs (it is told to look again) or a retry is due. */
  private kick(): void {
    if (this.closed || this.retry.due) return;
    if (this.draining !== null) {
      this.again = true;
      return;
    }
    this.again = false;
    this.draining = this.drain().finally(() => {
      this.draining = null;
      if (this.again) this.kick();
    });
  }

  /** Writes the queue to the store in order; on a failure the rest waits for a reconnect (backing off). */
  private async drain(): Promise<void> {
    const late = this.status !== "ok";
    let written = 0;
    try {
      if (late) await this.connect();
      for (let jobs = await this.spool.next(BATCH_MAX, keyOf); jobs.length > 0 && !this.closed; jobs = await this.spool.next(BATCH_MAX, keyOf)) {
        await this.write(jobs);
        this.spool.shift(jobs.length);
        written += jobs.length;
      }
      this.retry.reset();
      if (late) this.back(written);
    } catch (error) {
      if (late) this.counts.replayed += written;
      if (this.closed) return;
      this.unavailable(error);
      this.retryLater();
    }
  }

  /** Brings the schema up to date (or checks it, with migration off). */
  private async connect(): Promise<void> {
    const migrated = this.options.migrate === false
      ? { to: await bounded(schemaVersion(this.sql), 30_000, "reading the schema version"), applied: [] as number[], newer: false }
      : await bounded(migrate(this.sql), 30_000, "the schema migration");
    if (migrated.to === null) throw Object.assign(new Error("the store has no sessiontap schema (run sessiontap store migrate)"), { code: "ESCHEMA" });
    if (this.schema !== migrated.to || migrated.applied.length > 0) {
      this.options.log("store-schema", { version: migrated.to, applied: migrated.applied.join(",") || null, newer: migrated.newer });
    }
    this.schema = migrated.to;
  }

  /** The queue is written again after the store was away (or at start): said once. */
  private back(written: number): void {
    this.counts.replayed += written;
    if (this.status !== "ok" || written > 0) this.options.log("store", { status: "ok", replayed: written, spooled: this.spool.pending });
    this.status = "ok";
    this.misconfigured = null;
    const line = () => `sessiontap: the store ${redactUrl(this.options.url)} is usable again; ${written} spooled commit${written === 1 ? "" : "s"} written`;
    this.reach.ok(line);
    this.settings.ok(line);
  }

  /**
   * Commits of one conversation in one transaction; when the store refuses them, each is tried alone and one it refuses
   * for good is set aside. Rejects only when the store is away.
   */
  private async write(jobs: CommitJob[]): Promise<void> {
    try {
      const written = await bounded(this.writer.writeAll(jobs), this.options.commitTimeoutMs ?? 10_000, "a store transaction");
      const inserted = written.done?.inserted ?? 0;
      this.counts.records += inserted;
      this.counts.conflicts += written.records - inserted;
    } catch (error) {
      if (!isJobError(error)) throw error;
      if (jobs.length > 1) {
        for (const job of jobs) await this.write([job]);
        return;
      }
      this.counts.setAside++;
      this.counts.errors++;
      this.lastError = describe(error);
      this.options.log("store-error", { stage: "write", error: describe(error), session: jobs[0].sessionDir, setAside: this.counts.setAside });
      await this.spool.setAside(jobs[0]).catch((e) => this.options.log("store-error", { stage: "set-aside", error: describe(e) }));
    }
  }

  /**
   * The store cannot be used now: unreachable, or misconfigured (its settings refuse us). Each change of
   * state is one events-log line; stderr hears the first failure of each kind, then a reminder a minute.
   */
  private unavailable(error: unknown): void {
    this.counts.errors++;
    this.lastError = describe(error);
    const problem = configurationProblem(error);
    const status = problem === null ? "unreachable" : "misconfigured";
    const store = redactUrl(this.options.url);
    const spool = this.spool.dir;
    if (problem !== null) {
      this.misconfigured = `${problem} (${this.lastError})`;
      this.settings.fail(
        this.lastError,
        (first) =>
          `sessiontap: the store ${store} ${
            first ? "cannot be used" : "still cannot be used"
          }: ${this.misconfigured}; fix the store URL (--store / SESSIONTAP_STORE) or the store itself. Its commits are spooled in ${spool} and written once it accepts them (tried again every minute)`,
      );
    } else {
      this.misconfigured = null;
      this.reach.fail(
        this.lastError,
        (first) =>
          first
            ? `sessiontap: the store ${store} is unreachable (${this.lastError}); the client is unaffected, commits are spooled in ${spool} and written when it is back`
            : `sessiontap: the store ${store} is still unreachable (${this.lastError}); ${this.spool.pending} commits spooled`,
      );
    }
    if (this.status !== status) this.options.log("store", { status, error: this.lastError });
    this.status = status;
  }

  /** The next drain, after a backoff doubling from retryMinMs to retryMaxMs (a minute for a misconfigured store). */
  private retryLater(): void {
    this.retry.later(() => this.kick(), this.status === "misconfigured" ? CONFIG_RETRY_MS : undefined);
  }

  /** Waits, at most `boundMs`, for the queue to be written; says how many commits still wait. */
  async flush(boundMs: number): Promise<void> {
    this.kick();
    await settlesWithin(
      (async () => {
        while (this.draining !== null) await this.draining;
      })(),
      boundMs,
    );
    if (this.spool.pending > 0) this.options.log("store-spool", { waiting: this.spool.pending });
  }

  /** What /_tap/health shows: status, queued commits and counters; the URL without its password. */
  health(): StoreHealth {
    return {
      status: this.status,
      spooled: this.spool.pending,
      store: redactUrl(this.options.url),
      schema: this.schema,
      ...this.counts,
      lastError: this.lastError,
      misconfigured: this.misconfigured,
      conversationsInMemory: this.writer.size,
    };
  }

  /** Stops writing and closes the connections; what is still queued is written by the next start. */
  async close(): Promise<void> {
    this.closed = true;
    this.retry.cancel();
    await closeStore(this.sql, 1);
  }
}
