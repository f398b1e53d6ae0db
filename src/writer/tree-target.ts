/**
 * The tree of files as a write target (docs/DESIGN.md "Writes"): a conversation is a directory below the
 * root, resolved through trusted directories only (never a symlink or another user's), locked by a lock
 * file (one live writer across processes); catching up reads what other writers appended (moving a torn
 * last line aside) and binds identity before any write: a record of another session or agent stops the
 * write.
 */
import type { ConversationPlace } from "../protocol/commit-job.ts";
import type { Json } from "../protocol/json.ts";
import type { DirLocks } from "../storage/dir-lock.ts";
import type { AppendResult, Cursor, MirrorTree } from "../storage/mirror-tree.ts";
import { join } from "../storage/paths.ts";
import type { Owner, TargetIo, WriteTarget } from "./write-target.ts";

/** A directory holds records of another session or agent: nothing is written to it. */
export class IdentityError extends Error {
  override name = "IdentityError";
  readonly code = "EIDENTITY";
}

/** Checks that records found in a directory belong to it (identity is bound before any write). */
export function checkOwner(dir: string, records: Json[], owner: Owner): void {
  for (const r of records) {
    if ((r.sessionId ?? null) !== owner.sessionId) {
      throw new IdentityError(`${dir} holds records of another session (${JSON.stringify(r.sessionId ?? null).slice(0, 80)}); nothing was written`);
    }
    if (owner.agentId !== null && (r.agentId ?? null) !== owner.agentId) {
      throw new IdentityError(`${dir} holds records of another agent; nothing was written`);
    }
  }
}

/** What catching up found worth saying: torn last lines moved aside into `.torn` files. */
export interface TreeRepair {
  dir: string;
  file: string;
  bytes: number;
}

/** The tree under one root. */
export class TreeTarget implements WriteTarget<Cursor, AppendResult> {
  constructor(
    private readonly tree: MirrorTree,
    private readonly locks: DirLocks,
    /** Hears each torn line moved aside. */
    private readonly repaired: (repair: TreeRepair) => void,
  ) {}

  /** The directory of a conversation. */
  dirOf(place: ConversationPlace): string {
    return join(this.tree.root, place.key);
  }

  /** A cursor that has read nothing: no file. */
  newCursor(): Cursor {
    return new Map();
  }

  /** Runs `body` holding the conversation directory's lock (the main conversation's is taken while it is read). */
  async locked<T>(place: ConversationPlace, _main: ConversationPlace | null, body: (io: TargetIo<Cursor, AppendResult>) => Promise<T>): Promise<T> {
    const dir = this.dirOf(place);
    await this.tree.ensureDir(dir);
    const release = await this.locks.acquire(dir);
    try {
      return await body({
        catchUp: (of, cursor, owner) => (of.key === place.key ? this.catchUp(of, cursor, owner) : this.catchUpLocked(of, cursor, owner)),
        append: async (of, records, cursor) => {
          const text = records.map((r) => JSON.stringify(r) + "\n").join("");
          await this.tree.ensureDir(dir); // once more right before the write: no directory on the way was swapped
          const next = new Map(cursor);
          // On failure the cursor stays put: the next catch-up reads whatever reached the disk.
          const done = await this.tree.append(this.dirOf(of), text, next);
          return { cursor: next, uncertain: false, done };
        },
      });
    } finally {
      await release();
    }
  }

  /** Catches up another conversation's directory (the main one, for a side write) under its own lock. */
  private async catchUpLocked(place: ConversationPlace, cursor: Cursor, owner: Owner): Promise<{ records: Json[]; cursor: Cursor }> {
    const dir = this.dirOf(place);
    if (!(await this.tree.has(dir))) return { records: [], cursor };
    const release = await this.locks.acquire(dir);
    try {
      return await this.catchUp(place, cursor, owner);
    } finally {
      await release();
    }
  }

  /** Reads what others appended to a conversation's directory since `cursor`, checking whose it is. */
  private async catchUp(place: ConversationPlace, cursor: Cursor, owner: Owner): Promise<{ records: Json[]; cursor: Cursor }> {
    const dir = this.dirOf(place);
    const next = new Map(cursor);
    const found = await this.tree.catchUp(dir, next);
    for (const torn of found.repaired) this.repaired({ dir, ...torn });
    checkOwner(dir, found.records, owner);
    return { records: found.records, cursor: next };
  }
}
