/**
 * Where a commit writer's records go: the tree of files (writer/tree-target.ts) or the shared store
 * (store/pg-target.ts). Everything else about a write — the state kept per conversation, catching up,
 * planning, advancing only after the write — is the one pipeline in commit-writer.ts (docs/DESIGN.md
 * "Writes"); only these steps differ.
 */
import type { ConversationPlace, MirrorRecord } from "../protocol/commit-job.ts";
import type { Json } from "../protocol/json.ts";

/** Who a conversation belongs to: records found in it must say so. */
export interface Owner {
  sessionId: string | null;
  agentId: string | null;
}

/** What a write does while the target's lock is held. */
export interface TargetIo<Cursor, Done> {
  /**
   * The records other writers added to `place` after `cursor`, in order, and the cursor after them; throws
   * when they do not belong to `owner` (nothing is then written).
   */
  catchUp(place: ConversationPlace, cursor: Cursor, owner: Owner): Promise<{ records: Json[]; cursor: Cursor }>;
  /**
   * Appends `records` after `cursor` in one write. Returns the cursor after them, whether what the
   * conversation now holds is uncertain (read it again next time), and what was done, for the caller.
   */
  append(place: ConversationPlace, records: MirrorRecord[], cursor: Cursor): Promise<{ cursor: Cursor; uncertain: boolean; done: Done }>;
}

/** A place records can be written to, one conversation at a time across processes. */
export interface WriteTarget<Cursor, Done> {
  /** A cursor that has read nothing yet. */
  newCursor(): Cursor;
  /**
   * Runs `body` holding `place`'s cross-process write lock (and, with `main`, what lets the main
   * conversation be read while another process may write it); rejects when the outcome is unknown.
   */
  locked<T>(place: ConversationPlace, main: ConversationPlace | null, body: (io: TargetIo<Cursor, Done>) => Promise<T>): Promise<T>;
}
