/**
 * The shared PostgreSQL store (docs/DESIGN.md "The shared store"). Every commit the mirror makes is written to the
 * store in one transaction (see pg-target.ts), in order per conversation. While the store cannot be
 * reached, commits go to the outage spool in the local tree (pg-spool.ts) and a reconnect loop with
 * bounded backoff brings the schema up to date and replays the spool in order before anything is written
 * directly again: nothing lost, nothing doubled. The client never waits for any of it (docs/DESIGN.md
 * "Off the relay path"); nothing here rejects; every change of state is one events-log line, and one line
 * on stderr when the store becomes unreachable (at start too) and when it is back. A store that refuses
 * every connection for a reason of its settings (a role, a password, a database that is not there) is
 * `misconfigured`, said as such, and tried again only once a minute: it is not a network that may return.
 */
import type { EventFields } from "../storage/events-log.ts";
import { describe } from "../utils/describe-error.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { selfOwner } from "../storage/process-identity.ts";
import type { CommitJob } from "../protocol/commit-job.ts";
import { bounded, closeStore, configurationProblem, isJobError, openStore, redactUrl, type Sql } from "./pg-client.ts";
import { Alarm } from "../utils/alarm.ts";
import { migrate, schemaVersion } from "./pg-schema.ts";
import { PgSpool } from "./pg-spool.ts";
import { PgTarget, type StoreDone } from "./pg-target.ts";
import { CommitWriter } from "../writer/commit-writer.ts";
import { placeOf } from "../protocol/conversation.ts";
import { join } from "../storage/paths.ts";
import { settlesWithin } from "../utils/within.ts";

/** How the sink is set up. */
export interface PgSinkOptions {
  /** The store: a postgres:// or postgresql:// URL. */
  url: string;
  fs: FsAdapter;
  /** The mirror root; the spool lives in `<root>/.spool/postgres/`. */
  root: string;
  includeThinking: boolean;
  /** Conversations whose lineage is kept in memory (LRU). */
  maxSessions: number;
  /** Appends a line to the events log (ids, counts, states; never content or credentials). */
  log: (action: string, fields?: EventFields) => void;
  /** Migrate the schema at start when it is absent or older (default true). */
  migrate?: boolean;
  /** Longest transaction before its outcome counts as unknown and the job is spooled (default 10,000 ms). */
  commitTimeoutMs?: number;
  /** Seconds to wait for a connection (default 5). */
  connectTimeoutS?: number;
  /** Reconnect backoff: the first wait, doubled up to the longest (defaults 250 ms and 10,000 ms). */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Where the lines about the store's state go (default: nowhere). */
  stderr?: (line: string) => void;
  clock?: () => number;
}

/** How often a store refused for its settings is tried again. */
const CONFIG_RETRY_MS = 60_000;

/** What /_tap/health shows of the store. */
export interface StoreHealth {
  status: "starting" | "ok" | "unreachable" | "misconfigured";
  /** Commits waiting in the outage spool. */
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
  /** Spooled commits written once the store was back. */
  replayed: number;
  /** Commits the store refused for good, kept in the spool's failed-*.jsonl. */
  setAside: number;
  /** Commits that could not be spooled either: not in the store. */
  dropped: number;
  errors: number;
  lastError: string | null;
  /** Why the store refuses every connection for a reason of its settings (a role, a password, a database), or null. */
  misconfigured: string | null;
  conversationsInMemory: number;
}

/** The store sink (see the module comment). Never rejects and never throws into the client path. */
export class PgSink {
  readonly sql: Sql;
  readonly spool: PgSpool;
  private readonly writer: CommitWriter<bigint, StoreDone>;
  private status: StoreHealth["status"] = "starting";
  /** True while commits go to the spool (at start, and from a failure until the spool is replayed). */
  private spooling = true;
  private readonly chains = new Map<string, Promise<void>>();
  private readonly pending = new Set<Promise<void>>();
  private readonly counts = { commits: 0, records: 0, conflicts: 0, replayed: 0, setAside: 0, dropped: 0, errors: 0 };
  private lastError: string | null = null;
  private schema: number | null = null;
  private attempts = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private recovering = false;
  private closed = false;
  /** The store could not be reached: said once, then at most once a minute, and when it is back. */
  private readonly reach: Alarm;
  /** The store refused us for its settings: the same, separately. */
  private readonly settings: Alarm;
  /** Why the store's settings are wrong, while they are. */
  private misconfigured: string | null = null;

  constructor(private readonly options: PgSinkOptions) {
    const clock = options.clock ?? Date.now;
    const stderr = options.stderr ?? (() => {});
    this.reach = new Alarm(clock, stderr);
    this.settings = new Alarm(clock, stderr);
    this.sql = openStore(options.url, { connectTimeoutS: options.connectTimeoutS });
    // Twice the sessions: each may have a side conversation beside its main one.
    this.writer = new CommitWriter(new PgTarget(this.sql), options.includeThinking, options.maxSessions * 2);
    this.spool = new PgSpool(options.fs, join(options.root, ".spool", "postgres"), selfOwner(options.fs), {
      malformed: (file, line) => options.log("store-spool", { skipped: "malformed line", file, line }),
      adopted: (file, jobs) => options.log("store-spool", { adopted: file, jobs }),
      refused: (error) => options.log("store-error", { stage: "spool", error: describe(error) }),
    }, options.root);
  }

  /** Connects, migrates when safe and replays any spool a dead tap left, in the background; never rejects. */
  start(): void {
    this.recover();
  }

  /** Writes one response's records (after earlier commits of its conversation); never rejects. */
  commit(job: CommitJob): Promise<void> {
    this.counts.commits++;
    const key = placeOf(job.route, job.sessionDir, job.agentDir).key;
    const run = (this.chains.get(key) ?? Promise.resolve()).then(() => this.commitOne(job));
    const tail = this.track(run);
    this.chains.set(key, tail);
    void tail.then(() => {
      if (this.chains.get(key) === tail) this.chains.delete(key);
    });
    return tail;
  }

  /** Writes a job directly, or spools it while the store is away (the choice is made atomically with the replay's end). */
  private async commitOne(job: CommitJob): Promise<void> {
    for (;;) {
      if (!this.spooling) {
        try {
          return await this.writeOne(job);
        } catch (error) {
          this.outage(error);
        }
      }
      if (await this.toSpool(job)) return;
    }
  }

  /** One transaction; a job the store refuses for good is set aside. Rejects only when the store is away. */
  private async writeOne(job: CommitJob): Promise<void> {
    try {
      const written = await bounded(this.writer.write(job), this.options.commitTimeoutMs ?? 10_000, "a store transaction");
      const inserted = written.done?.inserted ?? 0;
      this.counts.records += inserted;
      this.counts.conflicts += written.records - inserted;
    } catch (error) {
      if (!isJobError(error)) throw error;
      this.counts.setAside++;
      this.counts.errors++;
      this.lastError = describe(error);
      this.options.log("store-error", { stage: "write", error: describe(error), session: job.sessionDir, setAside: this.counts.setAside });
      await this.spool.setAside(job).catch((e) => this.options.log("store-error", { stage: "set-aside", error: describe(e) }));
    }
  }

  /** Appends a job to the outage spool unless the replay has just emptied it (false: write it directly). */
  private async toSpool(job: CommitJob): Promise<boolean> {
    try {
      if (!(await this.spool.append(job, () => this.spooling))) return false;
    } catch (error) {
      this.counts.dropped++;
      this.options.log("store-error", { stage: "spool", error: describe(error), session: job.sessionDir, dropped: this.counts.dropped });
    }
    if (!this.recovering) this.scheduleRecover();
    return true;
  }

  /** The store went away: spool from now on, say so once, and start reconnecting. */
  private outage(error: unknown): void {
    this.spooling = true;
    this.counts.errors++;
    this.unavailable(error);
  }

  /**
   * The store cannot be used now: unreachable, or misconfigured (its settings refuse us). Each change of
   * state is one events-log line; stderr hears the first failure of each kind, then a reminder a minute.
   */
  private unavailable(error: unknown): void {
    this.lastError = describe(error);
    const problem = configurationProblem(error);
    const status = problem === null ? "unreachable" : "misconfigured";
    const store = redactUrl(this.options.url);
    const spool = join(this.options.root, ".spool", "postgres");
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

  /** One reconnect attempt: schema, then the spool in order; on success commits go straight to the store. */
  private recover(): void {
    if (this.recovering || this.closed) return;
    this.recovering = true;
    const attempt = (async () => {
      try {
        const migrated = this.options.migrate === false
          ? { to: await bounded(schemaVersion(this.sql), 30_000, "reading the schema version"), applied: [] as number[], newer: false }
          : await bounded(migrate(this.sql), 30_000, "the schema migration");
        if (migrated.to === null) throw Object.assign(new Error("the store has no sessiontap schema (run sessiontap store migrate)"), { code: "ESCHEMA" });
        if (this.schema !== migrated.to || migrated.applied.length > 0) {
          this.options.log("store-schema", { version: migrated.to, applied: migrated.applied.join(",") || null, newer: migrated.newer });
        }
        this.schema = migrated.to;
        const replayed = await this.spool.replay((job) => this.replayOne(job), () => (this.spooling = false));
        this.attempts = 0;
        if (!this.spooling) {
          if (this.status !== "ok" || replayed > 0) this.options.log("store", { status: "ok", replayed, spooled: this.spool.pending });
          this.status = "ok";
          this.misconfigured = null;
          const back = () =>
            `sessiontap: the store ${redactUrl(this.options.url)} is usable again; ${replayed} spooled commit${replayed === 1 ? "" : "s"} written`;
          this.reach.ok(back);
          this.settings.ok(back);
        }
      } catch (error) {
        this.attempts++;
        this.unavailable(error);
      } finally {
        this.recovering = false;
        if (this.spooling && !this.closed) this.scheduleRecover();
      }
    })();
    void this.track(attempt);
  }

  /** Replays one spooled job; rejects (stopping the replay) when the store went away again. */
  private async replayOne(job: CommitJob): Promise<void> {
    await this.writeOne(job);
    this.counts.replayed++;
  }

  /** The next reconnect attempt, after a backoff doubling from retryMinMs to retryMaxMs. */
  private scheduleRecover(): void {
    if (this.timer !== null || this.closed) return;
    const delay = this.status === "misconfigured"
      ? CONFIG_RETRY_MS
      : Math.min((this.options.retryMinMs ?? 250) * 2 ** Math.max(0, this.attempts - 1), this.options.retryMaxMs ?? 10_000);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.recover();
    }, this.attempts === 0 ? 0 : delay);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Keeps a promise until it settles, for flush(); never rejects. */
  private track(work: Promise<void>): Promise<void> {
    const settled = work.catch((error) => {
      this.counts.errors++;
      this.options.log("store-error", { stage: "internal", error: describe(error) });
    });
    this.pending.add(settled);
    void settled.finally(() => this.pending.delete(settled));
    return settled;
  }

  /** Waits for writes and a replay in flight, at most `boundMs`; says how many commits are still spooled. */
  async flush(boundMs: number): Promise<void> {
    await settlesWithin(Promise.all([...this.pending]), boundMs);
    if (this.spool.pending > 0) this.options.log("store-spool", { waiting: this.spool.pending });
  }

  /** What /_tap/health shows: status, spooled commits and counters; the URL without its password. */
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

  /** Stops reconnecting and closes the connections (commits after this go to the spool). */
  async close(): Promise<void> {
    this.closed = true;
    this.spooling = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await closeStore(this.sql, 1);
  }
}
