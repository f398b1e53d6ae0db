// The shared PostgreSQL store as a write target (docs/DESIGN.md "The shared store"): every commit is appended to the store's spool, and one
// drain writes the spool to PostgreSQL in order, one transaction per conversation's run under its advisory lock.
import type { EventFields } from "../storage/events-log.ts";
import { describe } from "../utils/describe-error.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { selfOwner } from "../storage/dir-lock.ts";
import { type CommitJob, type ConversationPlace, type MirrorRecord, placeOf } from "../protocol/commit-job.ts";
import type { Json } from "../protocol/json.ts";
import type { Redactor } from "../protocol/secrets.ts";
import {
  bounded,
  closeStore,
  configurationProblem,
  isJobError,
  LOCK_CLASS,
  lockKey,
  migrate,
  openStore,
  projectKey,
  redactUrl,
  type Sql,
  type Tx,
} from "./pg-client.ts";
import { Alarm, settlesWithin } from "../utils/alarm.ts";
import { Spool, trustedPlace } from "../storage/spool.ts";
import { CommitWriter, type TargetIo, type WriteTarget } from "../writer/commit-writer.ts";
import { join } from "node:path/posix";
import { KeyedQueue } from "../utils/keyed-queue.ts";

export interface PgSinkOptions {
  url: string;
  fs: FsAdapter;
  root: string;
  includeThinking: boolean;
  redactor?: Redactor | null;
  maxSessions: number;
  /** Ids, counts, states; never content or credentials. */
  log: (action: string, fields?: EventFields) => void;
  stderr?: (line: string) => void;
  clock?: () => number;
}

const BATCH_MAX = 64;
/** Longest transaction before its outcome counts as unknown and it is tried again. */
const COMMIT_TIMEOUT_MS = 10_000;
/** How often a store refused for its settings is tried again. */
const CONFIG_RETRY_MS = 60_000;
const keyOf = (job: CommitJob) => placeOf(job.route, job.sessionDir, job.agentDir).key;
/** The queue's one key: its items only wake the drain, the spool holds the commits. */
const STORE = "store";

/** What /_tap/health shows of the store (docs/DESIGN.md "The shared store"). */
export type StoreHealth = ReturnType<PgSink["health"]>;

export class PgSink {
  private sql: Sql;
  readonly spool: Spool;
  private readonly writer: CommitWriter<bigint, StoreDone>;
  private status: "starting" | "ok" | "unreachable" | "misconfigured" = "starting";
  /** conflicts: planned rows the store already had (by uuid); replayed: written after waiting in the spool; setAside: refused for good. */
  private readonly counts = { commits: 0, records: 0, conflicts: 0, replayed: 0, setAside: 0, dropped: 0, errors: 0, driverErrors: 0 };
  private lastError: string | null = null;
  private schema: number | null = null;
  private readonly queue: KeyedQueue<null>;
  private closed = false;
  /** Unreachable, or refused for its settings: each said once, then at most once a minute, and when it is back. */
  private readonly reach: Alarm;
  private readonly settings: Alarm;
  private misconfigured: string | null = null;

  constructor(private readonly options: PgSinkOptions) {
    const clock = options.clock ?? Date.now;
    const stderr = options.stderr ?? (() => {});
    this.reach = new Alarm(clock, stderr);
    this.settings = new Alarm(clock, stderr);
    this.sql = openStore(options.url);
    // Twice the sessions: each may have a side conversation beside its main one.
    this.writer = new CommitWriter(new PgTarget(() => this.sql), options.includeThinking, options.maxSessions * 2, options.redactor);
    const place = trustedPlace(options.fs, options.root, join(options.root, ".spool", "postgres"));
    this.spool = new Spool(options.fs, place, selfOwner(options.fs), {
      malformed: (file, at) => options.log("store-spool", { skipped: "malformed line", file, at }),
      adopted: (file, jobs) => options.log("store-spool", { adopted: file, jobs }),
      refused: (error) => options.log("store-error", { stage: "spool", error: describe(error) }),
    });
    this.queue = new KeyedQueue((_, wakes) => this.drain(wakes.length), Number.POSITIVE_INFINITY, clock, {
      failed: (_, error, attempt) => this.closed ? undefined : this.unavailable(error, attempt),
    });
  }

  start(): void {
    void this.queue.push(STORE, null);
  }

  /** Resolves once the commit is spooled (or counted as dropped); never rejects. */
  async commit(job: CommitJob): Promise<void> {
    this.counts.commits++;
    try {
      await this.spool.append(job);
    } catch (error) {
      this.counts.dropped++;
      this.options.log("store-error", { stage: "spool", error: describe(error), session: job.sessionDir, dropped: this.counts.dropped });
      return;
    }
    this.start();
  }

  /** The client threw from a callback of its own (porsager/postgres#1208): it is replaced; what was in flight is still spooled. */
  driverFailed(error: unknown): void {
    this.counts.driverErrors++;
    this.options.log("store-error", { stage: "driver", error: this.failure(error), replaced: true });
    const old = this.sql;
    this.sql = openStore(this.options.url);
    void closeStore(old, 0);
  }

  /** Writes the spool through, answering `wakes` wakes; on a failure the rest waits for a reconnect, backing off. */
  private async drain(wakes: number): Promise<number> {
    const late = this.status !== "ok";
    let written = 0;
    try {
      if (late) {
        const migrated = await bounded(migrate(this.sql), 30_000, "the schema migration");
        if (this.schema !== migrated.to || migrated.applied.length > 0) {
          this.options.log("store-schema", { version: migrated.to, applied: migrated.applied.join(",") || null, newer: migrated.newer });
        }
        this.schema = migrated.to;
      }
      for (let jobs = await this.spool.next(BATCH_MAX, keyOf); jobs.length > 0 && !this.closed; jobs = await this.spool.next(BATCH_MAX, keyOf)) {
        await this.write(jobs);
        this.spool.shift(jobs.length);
        written += jobs.length;
      }
    } finally {
      if (late) this.counts.replayed += written;
    }
    if (!late) return wakes;
    this.options.log("store", { status: "ok", replayed: written, spooled: this.spool.pending });
    this.status = "ok";
    this.misconfigured = null;
    const line = () => `sessiontap: the store ${redactUrl(this.options.url)} is usable again; ${written} spooled commit${written === 1 ? "" : "s"} written`;
    this.reach.ok(line);
    this.settings.ok(line);
    return wakes;
  }

  /** When the store refuses a run, each is tried alone and one it refuses for good set aside; rejects only when the store is away. */
  private async write(jobs: CommitJob[]): Promise<void> {
    try {
      const written = await bounded(this.writer.writeAll(jobs), COMMIT_TIMEOUT_MS, "a store transaction");
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
      this.options.log("store-error", { stage: "write", error: this.failure(error), session: jobs[0].sessionDir, setAside: this.counts.setAside });
      await this.spool.setAside(jobs[0]).catch((e) => this.options.log("store-error", { stage: "set-aside", error: describe(e) }));
    }
  }

  private failure(error: unknown): string {
    this.counts.errors++;
    return (this.lastError = describe(error));
  }

  /** Each change of state is one events-log line; stderr hears the first failure of each kind, then a reminder a minute. Returns the wait. */
  private unavailable(error: unknown, attempt: number): number {
    const why = this.failure(error);
    const problem = configurationProblem(error);
    const [store, spool, status] = [redactUrl(this.options.url), this.spool.dir, problem === null ? "unreachable" as const : "misconfigured" as const];
    this.misconfigured = problem === null ? null : `${problem} (${why})`;
    (problem === null ? this.reach : this.settings).fail(
      why,
      (first) =>
        problem !== null
          ? `sessiontap: the store ${store} ${
            first ? "cannot be used" : "still cannot be used"
          }: ${this.misconfigured}; fix the store URL (--store / SESSIONTAP_STORE) or the store itself. Its commits are spooled in ${spool} and written once it accepts them (tried again every minute)`
          : first
          ? `sessiontap: the store ${store} is unreachable (${why}); the client is unaffected, commits are spooled in ${spool} and written when it is back`
          : `sessiontap: the store ${store} is still unreachable (${why}); ${this.spool.pending} commits spooled`,
    );
    if (this.status !== status) this.options.log("store", { status, error: why });
    this.status = status;
    return problem === null ? Math.min(250 * 2 ** (attempt - 1), 10_000) : CONFIG_RETRY_MS;
  }

  /** Waits, at most `boundMs`, for the spool to be written; says how many commits still wait. */
  async flush(boundMs: number): Promise<void> {
    await settlesWithin(this.queue.flush(), boundMs);
    if (this.spool.pending > 0) this.options.log("store-spool", { waiting: this.spool.pending });
  }

  health() {
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

  /** What is still spooled is written by the next start. */
  async close(): Promise<void> {
    this.closed = true;
    this.queue.stop();
    await closeStore(this.sql, 1);
  }
}

/** One row of sessiontap_entries; `entry` is JSON text, bound as text and cast to json (postgres.js would encode a string again). */
export interface EntryRow {
  project_key: string;
  session_id: string;
  subpath: string;
  uuid: string | null;
  entry: string;
}

type StoreDone = { inserted: number };

function rowOf(place: ConversationPlace, record: MirrorRecord): EntryRow {
  const { cwd, uuid } = record as unknown as Json;
  return {
    project_key: projectKey(cwd),
    session_id: place.sessionDir,
    subpath: place.subpath,
    uuid: typeof uuid === "string" ? uuid : null,
    entry: JSON.stringify(record),
  };
}

/** Inserts rows in order, skipping a uuid already stored; resolves with the seq of each row inserted. */
export async function insertEntries(tx: Tx, rows: readonly EntryRow[]): Promise<bigint[]> {
  // Pipelined on the transaction's one connection, run in order: seq follows row order.
  const results = await Promise.all(rows.map((row) =>
    tx<{ seq: string }[]>`
    INSERT INTO sessiontap_entries (project_key, session_id, subpath, uuid, entry)
    VALUES (${row.project_key}, ${row.session_id}, ${row.subpath}, ${row.uuid}, ${row.entry}::text::json)
    ON CONFLICT DO NOTHING RETURNING seq`
  ));
  return results.flatMap((inserted) => inserted.map(({ seq }) => BigInt(seq)));
}

/** One transaction per write, holding the conversation's advisory lock (and a shared one on the main conversation a side write reads). */
class PgTarget implements WriteTarget<bigint, StoreDone> {
  constructor(private readonly sql: () => Sql) {}

  newCursor = () => 0n;

  async locked<T>(place: ConversationPlace, main: ConversationPlace | null, body: (io: TargetIo<bigint, StoreDone>) => Promise<T>): Promise<T> {
    return await this.sql().begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, ${lockKey(place)}::int4)`;
      if (main !== null) await tx`SELECT pg_advisory_xact_lock_shared(${LOCK_CLASS}::int4, ${lockKey(main)}::int4)`;
      return await body({
        catchUp: async (of, cursor) => {
          const rows = await tx<{ seq: string; entry: string }[]>`
            SELECT seq, entry::text AS entry FROM sessiontap_entries
            WHERE session_id = ${of.sessionDir} AND subpath = ${of.subpath} AND seq > ${cursor.toString()}::bigint ORDER BY seq`;
          return { records: rows.map((row) => JSON.parse(row.entry) as Json), cursor: rows.length === 0 ? cursor : BigInt(rows[rows.length - 1].seq) };
        },
        append: async (of, records, cursor) => {
          const seqs = await insertEntries(tx, records.map((r) => rowOf(of, r)));
          // Some rows were there already (a retried batch): the writer reads them back next time.
          return { cursor: seqs.reduce((a, b) => (b > a ? b : a), cursor), uncertain: seqs.length !== records.length, done: { inserted: seqs.length } };
        },
      });
    }) as T;
  }
}
