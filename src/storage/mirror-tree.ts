// The mirror tree (docs/DESIGN.md "The mirror"): a conversation is a directory below the root, reached through trusted directories only,
// written under its session's lock; torn final lines are moved aside, new files published without overwrite.
import { randomUUID } from "node:crypto";
import { join } from "node:path/posix";
import type { ConversationPlace, MirrorRecord } from "../protocol/commit-job.ts";
import { type Json, parseJsonl } from "../protocol/json.ts";
import { type DirLocks, removeLeftovers, writerTag } from "./dir-lock.ts";
import { type FsAdapter, isNotFound } from "./fs-adapter.ts";
import { JsonlFollower } from "./jsonl-follower.ts";
import { checkTrusted, ensureTrustedDir } from "./trusted-path.ts";

const decoder = new TextDecoder();

export interface AppendResult {
  path: string;
  bytes: number;
  rotated: boolean;
  created: boolean;
}

export type Cursor = Map<string, number>;

export class IdentityError extends Error {
  override name = "IdentityError";
  readonly code = "EIDENTITY";
}

export interface TreeWriting {
  locks: DirLocks;
  repaired(repair: { dir: string; file: string; bytes: number }): void;
}

/** A conversation's files: the regular `.jsonl` files in its directory, oldest first. */
export const jsonlNames = async (fs: FsAdapter, dir: string) =>
  (await fs.readdir(dir)).filter((e) => e.isFile && !e.isSymbolicLink && e.name.endsWith(".jsonl")).map((e) => e.name).sort();

/** ISO-8601 with `:` made `-`, so names sort by time. */
export function rotationName(ms: number, attempt = 0): string {
  const stamp = new Date(ms).toISOString().replace(/:/g, "-");
  return attempt === 0 ? `${stamp}.jsonl` : `${stamp}-${attempt}.jsonl`;
}

export class MirrorTree {
  private writer: Promise<string> | null = null;
  private staging = false;

  constructor(
    private readonly fs: FsAdapter,
    readonly root: string,
    private readonly maxBytes: number,
    private readonly clock: () => number,
    private readonly sync = true,
    private readonly writing: TreeWriting | null = null,
  ) {}

  async removeStaleStaging(): Promise<number> {
    const staging = join(this.root, ".staging");
    if ((await this.fs.lstat(staging))?.isDirectory !== true) return 0;
    await this.ensureDir(staging); // ours, as anything it removes from must be
    return (await removeLeftovers(this.fs, staging, (name) => name.endsWith(".part"), this.clock())).length;
  }

  async prepare(): Promise<void> {
    this.writer ??= writerTag(this.fs);
    await this.ensureDir(join(this.root, ".staging"));
    await this.writer;
    this.staging = true;
  }

  /** Trusted directories all the way down: writes never leave the root. */
  async ensureDir(dir: string): Promise<void> {
    await ensureTrustedDir(this.fs, this.root, dir);
  }

  newCursor = (): Cursor => new Map();

  /** One lock covers a session's main, side and subagent conversations, so a side write reads the main one under it. */
  async locked<T>(place: ConversationPlace, _main: ConversationPlace | null, body: (io: TreeIo) => Promise<T>): Promise<T> {
    if (this.writing === null) throw new Error("this tree was not made for writing");
    const { locks, repaired } = this.writing;
    await this.ensureDir(join(this.root, place.key));
    const release = await locks.acquire(join(this.root, place.sessionDir));
    try {
      return await body({
        catchUp: async (of, cursor, owner) => {
          const dir = join(this.root, of.key);
          const next = new Map(cursor);
          const found = await this.catchUp(dir, next);
          for (const torn of found.repaired) repaired({ dir, ...torn });
          for (const r of found.records) {
            if ((r.sessionId ?? null) !== owner.sessionId) {
              throw new IdentityError(`${dir} holds records of another session (${JSON.stringify(r.sessionId ?? null).slice(0, 80)}); nothing was written`);
            }
            if (owner.agentId !== null && (r.agentId ?? null) !== owner.agentId) {
              throw new IdentityError(`${dir} holds records of another agent; nothing was written`);
            }
          }
          return { records: found.records, cursor: next };
        },
        append: async (of, records, cursor) => {
          const next = new Map(cursor);
          const done = await this.append(join(this.root, of.key), records.map((r) => JSON.stringify(r) + "\n").join(""), next);
          return { cursor: next, uncertain: false, done };
        },
      });
    } finally {
      await release();
    }
  }

  /** What anyone appended since `cursor`, advancing it; under the lock, a final line without its newline (a writer killed mid-append) is
   * moved aside into `<file>.torn` and cut off, so the next append starts on a clean line. */
  private async catchUp(dir: string, cursor: Cursor): Promise<{ records: Json[]; repaired: { file: string; bytes: number }[] }> {
    const out = { records: [] as Json[], repaired: [] as { file: string; bytes: number }[] };
    for (const name of await jsonlNames(this.fs, dir)) {
      const path = join(dir, name);
      const info = await this.fs.lstat(path);
      if (info === null) continue;
      // A file another user planted (or left open to others) is never read into the lineage nor appended to.
      checkTrusted(path, info, "file");
      if (info.size < (cursor.get(name) ?? 0)) cursor.set(name, 0); // replaced or cut by someone else: read it again
      const start = cursor.get(name) ?? 0;
      cursor.set(name, start);
      if (info.size === start) continue;
      const lines: string[] = [];
      const torn: Uint8Array[] = [];
      const follower = new JsonlFollower(path, { startAt: () => start, maxLine: Number.POSITIVE_INFINITY });
      await follower.read(this.fs, (line) => void (line.last ? torn.push(line.bytes) : lines.push(decoder.decode(line.bytes))), { final: true });
      if (torn.length > 0) {
        await this.fs.append(`${path}.torn`, decoder.decode(torn[0]), this.sync);
        await this.fs.truncate(path, follower.offset);
        out.repaired.push({ file: `${name}.torn`, bytes: torn[0].length });
      }
      out.records.push(...parseJsonl(lines.join("\n")).records);
      cursor.set(name, Math.max(start, follower.offset));
    }
    return out;
  }

  /** Whole JSON lines in one write to the newest file, or a new file when full. */
  async append(dir: string, text: string, cursor: Cursor): Promise<AppendResult> {
    const newest = [...cursor.keys()].sort().at(-1);
    const bytes = Buffer.byteLength(text);
    const size = newest === undefined ? 0 : (cursor.get(newest) ?? 0);
    const full = newest !== undefined && size > 0 && size + bytes > this.maxBytes;
    if (newest !== undefined && !full) {
      const path = join(dir, newest);
      // On failure the cursor stays put: the next catch-up reads whatever reached the disk (and moves a torn tail aside).
      if (await this.fs.appendExisting(path, text, this.sync)) {
        cursor.set(newest, size + bytes);
        return { path, bytes, rotated: false, created: false };
      }
      // The sweep removed an idle session's old file: a new file, never one made afresh under the old name the cursor would misread.
      cursor.delete(newest);
    }
    const name = await this.publish(dir, text);
    cursor.set(name, bytes);
    return { path: join(dir, name), bytes, rotated: full, created: true };
  }

  /** Written aside, then linked into place under a name nobody has taken. */
  private async publish(dir: string, text: string): Promise<string> {
    if (!this.staging) await this.prepare();
    const aside = join(this.root, ".staging", `${await this.writer}-${randomUUID()}.part`);
    const created = await this.fs.createExclusive(aside, text, this.sync).catch((error) => {
      this.staging = false;
      throw error;
    });
    if (!created) throw new Error(`staging file ${aside} exists`);
    try {
      const now = this.clock();
      for (let attempt = 0, vanished = 0; attempt < 1000; attempt++) {
        try {
          if (await this.fs.link(aside, join(dir, rotationName(now, attempt)))) return rotationName(now, attempt);
        } catch (error) {
          // The retention sweep prunes a directory it emptied; a writer publishing into it then makes it again.
          if (!isNotFound(error) || ++vanished > 3) throw error;
          await this.ensureDir(dir);
          attempt--;
        }
      }
      throw new Error(`could not publish a new mirror file in ${dir}`);
    } finally {
      await this.fs.unlink(aside);
    }
  }
}

// The shape of writer/commit-writer.ts's TargetIo, said again here: storage sits below the writer and may not import it.
type TreeIo = {
  catchUp(place: ConversationPlace, cursor: Cursor, owner: { sessionId: string | null; agentId: string | null }): Promise<{ records: Json[]; cursor: Cursor }>;
  append(place: ConversationPlace, records: MirrorRecord[], cursor: Cursor): Promise<{ cursor: Cursor; uncertain: boolean; done: AppendResult }>;
};
