/**
 * The one write pipeline (docs/DESIGN.md "Writes"), whatever the target: per conversation, under its
 * in-process lock and its target's cross-process lock, read what other writers added since this process
 * last looked, plan the commit against that lineage (and, for a side conversation, over the main one's),
 * append the planned records in one write, and only then advance the lineage. A write that fails, or
 * whose outcome is unknown, drops the conversation's state: it is read again from the target next time.
 */
import { type CommitJob, type ConversationPlace, mainPlaceOf, placeOf, planCommit, type Staged } from "../protocol/commit-job.ts";
import { Lineage, LineageReader } from "../protocol/lineage.ts";
import { type Redactor, redactRecords } from "../protocol/secrets.ts";
import { ConversationStates } from "./conversation-states.ts";
import type { Owner, TargetIo, WriteTarget } from "./write-target.ts";

/** What a writer remembers of one conversation. */
export interface ConversationState<Cursor> {
  lineage: Lineage;
  reader: LineageReader;
  cursor: Cursor;
}

/** What one write did: records planned, and what the target did with them (null when nothing was new). */
export interface Written<Done> {
  records: number;
  done: Done | null;
}

/** Applies a written plan to the lineage. */
function advance(lineage: Lineage, staged: Staged): void {
  for (const op of staged.ops) {
    if ("add" in op) lineage.add(op.add);
    else lineage.alias(op.alias.key, op.alias.uuid);
  }
}

/** Writes commits to one target, exactly once per message. */
export class CommitWriter<Cursor, Done> {
  private readonly states: ConversationStates<ConversationState<Cursor>>;
  /** The place of each conversation seen, by key (a side conversation's state needs its main one's). */
  private readonly places = new Map<string, ConversationPlace>();

  constructor(
    private readonly target: WriteTarget<Cursor, Done>,
    private readonly includeThinking: boolean,
    private readonly maxConversations: number,
    /** Replaces secrets in what is written (docs/DESIGN.md "Secrets"), null to write them as they are. */
    private readonly redactor: Redactor | null = null,
  ) {
    this.states = new ConversationStates(maxConversations, async (key) => {
      const lineage = new Lineage();
      // A side conversation's records hang from the main conversation: its reader resolves parents there.
      const main = mainPlaceOf(this.places.get(key)!);
      const outside = main === null ? undefined : await this.states.withState(main.key, async (m) => m.lineage);
      return { lineage, reader: new LineageReader(lineage, outside, redactor && ((r) => redactor.unseal(r))), cursor: this.target.newCursor() };
    });
  }

  /** Writes one commit (see the module comment); rejects when the write failed or its outcome is unknown. */
  async write(job: CommitJob): Promise<Written<Done>> {
    return await this.writeAll([job]);
  }

  /**
   * Writes commits of one conversation, in order, in one append (docs/DESIGN.md "Writes": commits that
   * waited for a write in flight go together, one append and one fsync). Each is planned over the lineage as
   * the ones before it leave it; should the append fail, the conversation's state is dropped and read
   * again from the target, so nothing planned counts until it is written (docs/DESIGN.md "Exactly once").
   */
  async writeAll(jobs: readonly CommitJob[]): Promise<Written<Done>> {
    const job = jobs[0];
    const place = placeOf(job.route, job.sessionDir, job.agentDir);
    const main = mainPlaceOf(place);
    this.remember(place);
    if (main !== null) this.remember(main);
    const owner: Owner = { sessionId: job.base.sessionId, agentId: job.base.agentId };
    return await this.states.withState(place.key, async (state) => {
      try {
        const after = await this.target.locked(place, main, async (io) => {
          await this.catchUp(io, place, state, owner);
          const mainLineage = main === null ? null : await this.states.withState(main.key, async (m) => {
            await this.catchUp(io, main, m, { sessionId: owner.sessionId, agentId: null });
            return m.lineage;
          });
          const records: Staged["records"] = [];
          for (const next of jobs) {
            const staged = planCommit(next, state.lineage, mainLineage, place.scope, this.includeThinking);
            if (staged.records.length === 0) continue;
            advance(state.lineage, staged); // counts only once the append below succeeds (else the state is dropped)
            records.push(...staged.records);
          }
          if (records.length === 0) return null;
          const out = this.redactor === null ? records : await redactRecords(records, this.redactor); // planned and hashed before
          return { records: records.length, written: await io.append(place, out, state.cursor) };
        });
        if (after === null) return { records: 0, done: null };
        state.cursor = after.written.cursor;
        if (after.written.uncertain) this.reset(place.key);
        return { records: after.records, done: after.written.done };
      } catch (error) {
        this.reset(place.key); // what reached the target is unknown, and the lineage may hold what did not
        throw error;
      }
    });
  }

  /** Keeps a place by its key, most recent last, bounded like the states. */
  private remember(place: ConversationPlace): void {
    this.places.delete(place.key);
    this.places.set(place.key, place);
    for (const key of this.places.keys()) {
      if (this.places.size <= this.maxConversations * 4) break;
      this.places.delete(key);
    }
  }

  /** Applies what other writers added to `place` since `state` last looked. */
  private async catchUp(io: TargetIo<Cursor, Done>, place: ConversationPlace, state: ConversationState<Cursor>, owner: Owner): Promise<void> {
    const found = await io.catchUp(place, state.cursor, owner);
    for (const r of found.records) state.reader.apply(r);
    state.cursor = found.cursor;
  }

  /**
   * Forgets a conversation's state, so it is read again from the target (its files changed under it, or a
   * write's outcome is unknown), and the state of every side conversation that reads its lineage.
   */
  reset(key: string): void {
    this.states.reset(key);
    for (const [other, place] of this.places) if (mainPlaceOf(place)?.key === key) this.states.reset(other);
  }

  /** Conversations held in memory. */
  get size(): number {
    return this.states.size;
  }
}
