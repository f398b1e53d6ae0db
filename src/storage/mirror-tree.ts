/**
 * The mirror tree (docs/DESIGN.md "The mirror"): the one resolver from a conversation directory to its files.
 * Before anything is written it makes sure every directory on the way is a real directory under the
 * root (never a symlink), reads what other writers appended since it last looked, and repairs a torn
 * final line by moving it aside into a `.torn` file. New files are published without overwrite (written
 * aside, then linked into place).
 */
import { randomUUID } from "node:crypto";
import { type FsAdapter, isNotFound } from "./fs-adapter.ts";
import { checkTrusted, ensureTrustedDir, UnsafePathError } from "./trusted-path.ts";
import { removeLeftovers, writerTag } from "./leftovers.ts";
import { join } from "./paths.ts";
import { parseJsonl } from "../protocol/json.ts";

export { UnsafePathError };

const NEWLINE = 0x0a;

/** What one append did. */
export interface AppendResult {
  path: string;
  bytes: number;
  rotated: boolean;
  created: boolean;
}

/** How far a directory's files have been read: file name → bytes applied. */
export type Cursor = Map<string, number>;

/** Records found since the cursor, in file order. */
export interface CatchUp {
  records: Record<string, unknown>[];
  malformedLines: number;
  /** Torn final lines moved aside: the `.torn` file and the bytes moved. */
  repaired: { file: string; bytes: number }[];
}

/** A rotation file name from a time: ISO-8601 with `:` made `-`, so names sort by time. */
export function rotationName(ms: number, attempt = 0): string {
  const stamp = new Date(ms).toISOString().replace(/:/g, "-");
  return attempt === 0 ? `${stamp}.jsonl` : `${stamp}-${attempt}.jsonl`;
}

/** The mirror tree under one root. */
export class MirrorTree {
  /** This process as it names its staging files. */
  private writer: Promise<string> | null = null;

  constructor(
    private readonly fs: FsAdapter,
    readonly root: string,
    private readonly maxBytes: number,
    private readonly clock: () => number,
    private readonly sync = true,
  ) {}

  /** Removes the staging files of writers that are provably gone (killed mid-publish); returns how many. */
  async removeStaleStaging(): Promise<number> {
    const staging = join(this.root, ".staging");
    if ((await this.fs.lstat(staging))?.isDirectory !== true) return 0;
    await this.ensureDir(staging); // ours, as anything it removes from must be
    return (await removeLeftovers(this.fs, staging, (name) => name.endsWith(".part"), this.clock())).length;
  }

  /** The `*.jsonl` file names directly in `dir`, oldest first (names sort by time); links are not files. */
  async fileNames(dir: string): Promise<string[]> {
    const entries = await this.fs.readdir(dir);
    return entries.filter((e) => e.isFile && !e.isSymbolicLink && e.name.endsWith(".jsonl")).map((e) => e.name).sort();
  }

  /** True when something (a directory, it is hoped: catching up checks) is at `dir`. */
  async has(dir: string): Promise<boolean> {
    return (await this.fs.lstat(dir)) !== null;
  }

  /**
   * Makes `dir` (below the root) exist as real directories all the way down, 0700. Throws
   * UnsafePathError when a component, the root included, is a symlink, not a directory, another user's or
   * writable by others (trusted-path.ts): writes never leave the root, nor go where a neighbour can reach.
   */
  async ensureDir(dir: string): Promise<void> {
    if (!dir.startsWith(this.root + "/")) throw new UnsafePathError(`${dir} is not under the mirror root`);
    await ensureTrustedDir(this.fs, this.root, dir);
  }

  /**
   * Reads what was appended to `dir` since `cursor` (by anyone), advancing it. A final line without its
   * newline (a writer killed mid-append) is moved aside into `<file>.torn` and cut off, so the next
   * append starts on a clean line; call it holding the directory's writer lock.
   */
  async catchUp(dir: string, cursor: Cursor): Promise<CatchUp> {
    const out: CatchUp = { records: [], malformedLines: 0, repaired: [] };
    for (const name of await this.fileNames(dir)) {
      const path = join(dir, name);
      const from = cursor.get(name) ?? 0;
      const info = await this.fs.lstat(path);
      if (info === null) continue;
      // A file another user planted (or left open to others) is never read into the lineage nor appended to.
      checkTrusted(path, info, "file");
      if (info.size < from) cursor.set(name, 0); // replaced or cut by someone else: read it again
      const start = cursor.get(name) ?? 0;
      if (info.size === start) {
        cursor.set(name, start);
        continue;
      }
      const bytes = await this.fs.readRange(path, start);
      const end = bytes.lastIndexOf(NEWLINE) + 1;
      if (end < bytes.length) {
        const torn = bytes.subarray(end);
        await this.fs.append(`${path}.torn`, new TextDecoder().decode(torn), this.sync);
        await this.fs.truncate(path, start + end);
        out.repaired.push({ file: `${name}.torn`, bytes: torn.length });
      }
      const parsed = parseJsonl(new TextDecoder().decode(bytes.subarray(0, end)));
      out.records.push(...parsed.records);
      out.malformedLines += parsed.malformed;
      cursor.set(name, start + end);
    }
    return out;
  }

  /** Appends `text` (whole JSON lines) to the directory's newest file in one write, publishing a new file when full. */
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
      // The file went since the catch-up (the retention sweep removes an idle session's old file): the
      // records go into a new file, never into one made afresh under the old name, which the cursor
      // would misread (docs/DESIGN.md "The mirror").
      cursor.delete(newest);
    }
    const name = await this.publish(dir, text);
    cursor.set(name, bytes);
    return { path: join(dir, name), bytes, rotated: full, created: true };
  }

  /** Writes a new rotation file aside, then links it into place under a name nobody has taken. */
  private async publish(dir: string, text: string): Promise<string> {
    const staging = join(this.root, ".staging");
    await this.ensureDir(staging); // written aside there first: it must be ours as much as the target
    // Named after this process, so a start after a kill can prove it stale (leftovers.ts).
    this.writer ??= writerTag(this.fs);
    const aside = join(staging, `${await this.writer}-${randomUUID()}.part`);
    if (!(await this.fs.createExclusive(aside, text, this.sync))) throw new Error(`staging file ${aside} exists`);
    try {
      const now = this.clock();
      for (let attempt = 0, vanished = 0; attempt < 1000; attempt++) {
        const name = rotationName(now, attempt);
        try {
          if (await this.fs.link(aside, join(dir, name))) return name;
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
