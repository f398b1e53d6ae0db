/**
 * Writes one commit to the shared store in one transaction (issue 7). The lineage of each conversation
 * lives in the store: inside the transaction the writer takes the conversation's advisory lock (per
 * conversation, never global), reads the rows other taps added since its cursor and applies them with
 * LineageReader, plans with planCommit, inserts, and only after the commit advances its in-memory lineage.
 * So two taps serving alternate turns of one session stay exactly-once. A side conversation is planned over
 * the main conversation's lineage, read under a shared lock on the main conversation.
 */
import { planCommit } from "../protocol/commit-plan.ts";
import { Lineage, LineageReader } from "../protocol/lineage-state.ts";
import type { MirrorRecord } from "../protocol/envelope.ts";
import type { CommitJob } from "../protocol/commit-job.ts";
import { SessionStates } from "../tap/session-states.ts";
import { conversation, LOCK_CLASS, lockKey, projectKey, routeOf, type Sql, type StoreRoute, type Tx } from "./pg-client.ts";

/** What the writer remembers of one conversation: its lineage and the last row it has applied. */
interface ConversationState {
  lineage: Lineage;
  reader: LineageReader;
  cursor: bigint;
}

/** One row of sessiontap_entries, as inserted. */
export interface EntryRow {
  project_key: string;
  session_id: string;
  subpath: string;
  uuid: string | null;
  /** The record as JSON text, bound as text and cast to json (postgres.js would encode a string again). */
  entry: string;
}

/** The rows of one commit's records. */
export function rowsOf(route: StoreRoute, records: readonly MirrorRecord[]): EntryRow[] {
  return records.map((r) => {
    const rec = r as unknown as Record<string, unknown>;
    return {
      project_key: projectKey(rec.cwd), session_id: route.sessionId, subpath: route.subpath,
      uuid: typeof rec.uuid === "string" ? rec.uuid : null, entry: JSON.stringify(r),
    };
  });
}

/**
 * Inserts rows in order; a row whose uuid is already stored is skipped (the uuid is the idempotency key,
 * so a retried batch inserts nothing twice). Resolves with the seq of each row inserted.
 */
export async function insertEntries(tx: Tx, rows: readonly EntryRow[]): Promise<bigint[]> {
  // Sent together on the transaction's one connection (pipelined), run in order: seq follows row order.
  const results = await Promise.all(rows.map((row) => tx<{ seq: string }[]>`
    INSERT INTO sessiontap_entries (project_key, session_id, subpath, uuid, entry)
    VALUES (${row.project_key}, ${row.session_id}, ${row.subpath}, ${row.uuid}, ${row.entry}::text::json)
    ON CONFLICT DO NOTHING RETURNING seq`));
  return results.flatMap((inserted) => inserted.map(({ seq }) => BigInt(seq)));
}

/** What one write did. */
export interface StoreWritten {
  /** Records planned (0 when the store already had everything). */
  records: number;
  /** Rows inserted (fewer than records only when some uuid was already stored). */
  inserted: number;
}

/** The store's writer: per-conversation lineages (LRU, rebuilt from the rows) and the one-transaction write. */
export class StoreWriter {
  private readonly states: SessionStates<ConversationState>;

  constructor(
    private readonly sql: Sql,
    private readonly includeThinking: boolean,
    maxSessions: number,
  ) {
    this.states = new SessionStates<ConversationState>(maxSessions * 2, async (key) => {
      const lineage = new Lineage();
      // A side conversation's records hang from the main one: its reader resolves parents there.
      const outside = key.endsWith("/side") ? (await this.stateOf(key.slice(0, -"side".length))).lineage : undefined;
      return { lineage, reader: new LineageReader(lineage, outside), cursor: 0n };
    });
  }

  /** Writes one job (see the module comment). Rejects when the transaction failed or its outcome is unknown. */
  async write(job: CommitJob): Promise<StoreWritten> {
    const route = routeOf(job);
    const main = conversation(route.sessionId, "", route.sessionId);
    const mainState = route.subpath === "side" ? await this.stateOf(main.key) : null;
    return await this.states.withIndex(route.key, async (state) => {
      try {
        return await this.transact(job, route, state, main, mainState);
      } catch (error) {
        // What reached the store is unknown: this conversation is read again from the rows next time.
        this.reset(route.key);
        throw error;
      }
    });
  }

  /** The transaction of one write. */
  private async transact(job: CommitJob, route: StoreRoute, state: ConversationState, main: StoreRoute, mainState: ConversationState | null): Promise<StoreWritten> {
    const { staged, seqs } = await this.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, ${lockKey(route)}::int4)`;
      let mainLineage: Lineage | null = null;
      if (mainState !== null) {
        await tx`SELECT pg_advisory_xact_lock_shared(${LOCK_CLASS}::int4, ${lockKey(main)}::int4)`;
        await catchUp(tx, main, mainState);
        mainLineage = mainState.lineage;
      }
      await catchUp(tx, route, state);
      const staged = planCommit(job, state.lineage, mainLineage, route.scope, this.includeThinking);
      if (staged.records.length === 0) return { staged, seqs: [] as bigint[] };
      return { staged, seqs: await insertEntries(tx, rowsOf(route, staged.records)) };
    });
    if (seqs.length === 0) return { records: staged.records.length, inserted: 0 };
    // Committed: only now does the lineage advance (SPEC §4 "Exactly once"), unless a reader of this
    // conversation (a side write reading its main) has already applied these rows.
    if (seqs[0] > state.cursor) {
      for (const op of staged.ops) {
        if ("add" in op) state.lineage.add(op.add);
        else state.lineage.alias(op.alias.key, op.alias.uuid);
      }
      state.cursor = seqs[seqs.length - 1];
    }
    if (seqs.length !== staged.records.length) this.reset(route.key); // some rows were there already: read them
    return { records: staged.records.length, inserted: seqs.length };
  }

  /** Drops a conversation's state (and its side conversation's, which hangs from it). */
  reset(key: string): void {
    this.states.reset(key);
    if (key.endsWith("/")) this.states.reset(`${key}side`);
  }

  /** A conversation's state, created on first use. */
  private stateOf(key: string): Promise<ConversationState> {
    return this.states.withIndex(key, async (state) => state);
  }

  /** Conversations held in memory. */
  get size(): number {
    return this.states.size;
  }
}

/** Applies the conversation's rows after the state's cursor, in seq order (under the conversation's lock). */
async function catchUp(tx: Tx, route: StoreRoute, state: ConversationState): Promise<void> {
  const rows = await tx<{ seq: string; entry: string }[]>`
    SELECT seq, entry::text AS entry FROM sessiontap_entries
    WHERE session_id = ${route.sessionId} AND subpath = ${route.subpath} AND seq > ${state.cursor.toString()}::bigint
    ORDER BY seq`;
  for (const row of rows) {
    state.reader.apply(JSON.parse(row.entry) as Record<string, unknown>);
    state.cursor = BigInt(row.seq);
  }
}
