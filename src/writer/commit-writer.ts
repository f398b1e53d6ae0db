// The one write pipeline of both targets (docs/DESIGN.md "Writes"): under the target's lock, read what other writers added, plan, append
// in one write, and only then advance the lineage. Callers serialise a conversation's writes (the sink's keyed queue, the store's drain).
import { LRUCache } from "lru-cache";
import { type CommitJob, type ConversationPlace, mainPlaceOf, type MirrorRecord, placeOf, planCommit, type Staged } from "../protocol/commit-job.ts";
import type { Json } from "../protocol/json.ts";
import { Lineage, LineageReader } from "../protocol/lineage.ts";
import { type Redactor, redactRecords } from "../protocol/secrets.ts";

type Owner = { sessionId: string | null; agentId: string | null };

export interface TargetIo<Cursor, Done> {
  /** What others added to `place` after `cursor`; throws when it is not `owner`'s (nothing is written then). */
  catchUp(place: ConversationPlace, cursor: Cursor, owner: Owner): Promise<{ records: Json[]; cursor: Cursor }>;
  /** Appends in one write; `uncertain`: what the conversation holds now is to be read again. */
  append(place: ConversationPlace, records: MirrorRecord[], cursor: Cursor): Promise<{ cursor: Cursor; uncertain: boolean; done: Done }>;
}

/** The tree (storage/mirror-tree.ts) or the store (store/pg-sink.ts). */
export interface WriteTarget<Cursor, Done> {
  newCursor(): Cursor;
  /** Runs `body` holding `place`'s cross-process lock (and what lets `main` be read meanwhile). */
  locked<T>(place: ConversationPlace, main: ConversationPlace | null, body: (io: TargetIo<Cursor, Done>) => Promise<T>): Promise<T>;
}

type State<Cursor> = { lineage: Lineage; reader: LineageReader; cursor: Cursor };

/** Exactly once per message; a conversation's state is rebuilt from the target after a start or eviction. */
export class CommitWriter<Cursor, Done> {
  private readonly states: LRUCache<string, State<Cursor>>;

  constructor(
    private readonly target: WriteTarget<Cursor, Done>,
    private readonly includeThinking: boolean,
    maxConversations: number,
    private readonly redactor: Redactor | null = null,
  ) {
    this.states = new LRUCache({ max: maxConversations });
  }

  /** Commits of one conversation, in one append; rejects when it failed or its outcome is unknown (the state is dropped then). */
  async writeAll(jobs: readonly CommitJob[]): Promise<{ records: number; done: Done | null }> {
    const job = jobs[0];
    const place = placeOf(job.route, job.sessionDir, job.agentDir);
    const main = mainPlaceOf(place);
    const owner: Owner = { sessionId: job.base.sessionId, agentId: job.base.agentId };
    try {
      const after = await this.target.locked(place, main, async (io) => {
        const mainState = main === null ? null : await this.caughtUp(io, main, { sessionId: owner.sessionId, agentId: null }, null);
        const state = await this.caughtUp(io, place, owner, mainState);
        const records: Staged["records"] = [];
        for (const next of jobs) {
          const staged = planCommit(next, state.lineage, mainState?.lineage ?? null, place.scope, this.includeThinking);
          for (const op of staged.ops) {
            if ("add" in op) state.lineage.add(op.add);
            else state.lineage.alias(op.alias.key, op.alias.uuid);
          }
          records.push(...staged.records);
        }
        if (records.length === 0) return null;
        const out = this.redactor === null ? records : await redactRecords(records, this.redactor); // planned and hashed before
        return { state, records: records.length, written: await io.append(place, out, state.cursor) };
      });
      if (after === null) return { records: 0, done: null };
      after.state.cursor = after.written.cursor;
      if (after.written.uncertain) this.reset(place.key);
      return { records: after.records, done: after.written.done };
    } catch (error) {
      this.reset(place.key); // what reached the target is unknown, and the lineage may hold what did not
      throw error;
    }
  }

  private async caughtUp(io: TargetIo<Cursor, Done>, place: ConversationPlace, owner: Owner, main: State<Cursor> | null): Promise<State<Cursor>> {
    let state = this.states.get(place.key);
    if (state === undefined) {
      const lineage = new Lineage();
      state = {
        lineage,
        reader: new LineageReader(lineage, main?.lineage, this.redactor && ((r) => this.redactor!.unseal(r))),
        cursor: this.target.newCursor(),
      };
      this.states.set(place.key, state);
    }
    const found = await io.catchUp(place, state.cursor, owner);
    for (const r of found.records) state.reader.apply(r);
    state.cursor = found.cursor;
    return state;
  }

  /** Forgets a conversation and the side conversation reading its lineage. */
  reset(key: string): void {
    this.states.delete(key);
    this.states.delete(`${key}/side`);
  }

  get size(): number {
    return this.states.size;
  }
}
