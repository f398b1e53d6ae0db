// The shared store as a write target (docs/DESIGN.md "The shared store"): a write is one transaction that takes the conversation's advisory lock (per
// conversation, never global; a shared one on the main conversation while a side write reads it), reads the rows other taps added since the cursor, and…
import type { ConversationPlace, MirrorRecord } from "../protocol/commit-job.ts";
import type { Json } from "../protocol/json.ts";
import type { TargetIo, WriteTarget } from "../writer/commit-writer.ts";
import { LOCK_CLASS, lockKey, projectKey, type Sql, type Tx } from "./pg-client.ts";

/** One row of sessiontap_entries, as inserted. */
export interface EntryRow {
  project_key: string;
  session_id: string;
  subpath: string;
  uuid: string | null;
  /** The record as JSON text, bound as text and cast to json (postgres.js would encode a string again). */
  entry: string;
}

/** What one write did in the store. */
export interface StoreDone {
  /** Rows inserted (fewer than the records planned only when some uuid was already stored). */
  inserted: number;
}

/** The rows of one commit's records. */
export function rowsOf(place: ConversationPlace, records: readonly MirrorRecord[]): EntryRow[] {
  return records.map((r) => {
    const rec = r as unknown as Json;
    return {
      project_key: projectKey(rec.cwd),
      session_id: place.sessionDir,
      subpath: place.subpath,
      uuid: typeof rec.uuid === "string" ? rec.uuid : null,
      entry: JSON.stringify(r),
    };
  });
}

/**
 * Inserts rows in order; a row whose uuid is already stored is skipped. Resolves with the seq of each
 * row inserted.
 */
export async function insertEntries(tx: Tx, rows: readonly EntryRow[]): Promise<bigint[]> {
  // Sent together on the transaction's one connection (pipelined), run in order: seq follows row order.
  const results = await Promise.all(rows.map((row) =>
    tx<{ seq: string }[]>`
    INSERT INTO sessiontap_entries (project_key, session_id, subpath, uuid, entry)
    VALUES (${row.project_key}, ${row.session_id}, ${row.subpath}, ${row.uuid}, ${row.entry}::text::json)
    ON CONFLICT DO NOTHING RETURNING seq`
  ));
  return results.flatMap((inserted) => inserted.map(({ seq }) => BigInt(seq)));
}

/** The store, one transaction per write. */
export class PgTarget implements WriteTarget<bigint, StoreDone> {
  /** `sql`: the store's client now (it is replaced after it failed on its own). */
  constructor(private readonly sql: () => Sql) {}

  /** A cursor that has read nothing: before the first row. */
  newCursor(): bigint {
    return 0n;
  }

  /** Runs `body` in one transaction holding the conversation's advisory lock (and a shared one on `main`). */
  async locked<T>(place: ConversationPlace, main: ConversationPlace | null, body: (io: TargetIo<bigint, StoreDone>) => Promise<T>): Promise<T> {
    return await this.sql().begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, ${lockKey(place)}::int4)`;
      if (main !== null) await tx`SELECT pg_advisory_xact_lock_shared(${LOCK_CLASS}::int4, ${lockKey(main)}::int4)`;
      return await body({
        catchUp: (of, cursor) => catchUp(tx, of, cursor),
        append: async (of, records, cursor) => {
          const seqs = await insertEntries(tx, rowsOf(of, records));
          // Some rows were there already (a retried batch): the writer reads them back next time.
          return { cursor: seqs.reduce((a, b) => (b > a ? b : a), cursor), uncertain: seqs.length !== records.length, done: { inserted: seqs.length } };
        },
      });
    }) as T;
  }
}

/** The conversation's rows after `cursor`, in seq order (under the conversation's lock). */
async function catchUp(tx: Tx, place: ConversationPlace, cursor: bigint): Promise<{ records: Json[]; cursor: bigint }> {
  const rows = await tx<{ seq: string; entry: string }[]>`
    SELECT seq, entry::text AS entry FROM sessiontap_entries
    WHERE session_id = ${place.sessionDir} AND subpath = ${place.subpath} AND seq > ${cursor.toString()}::bigint
    ORDER BY seq`;
  let last = cursor;
  const records: Json[] = [];
  for (const row of rows) {
    records.push(JSON.parse(row.entry) as Json);
    last = BigInt(row.seq);
  }
  return { records, cursor: last };
}
