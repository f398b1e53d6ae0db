/**
 * The mirror tree (SPEC §4 "Tree"): where a session's records live, the active file of each directory,
 * rotation at max bytes, and reading records back to rebuild state after a start.
 */
import type { FsAdapter } from "./fs-adapter.ts";

/** Directory mode for every directory of the tree. */
export const DIR_MODE = 0o700;
const NEWLINE = 0x0a;

/** The active file of one directory, as last seen. */
interface Active {
  path: string;
  size: number;
  /** False when the file was found ending mid-line (a crash mid-write). */
  endsClean: boolean;
}

/** What one append did. */
export interface AppendResult {
  path: string;
  bytes: number;
  rotated: boolean;
  created: boolean;
}

/** Records read back from a directory's files, oldest file first, in file order. */
export interface ReadBack {
  records: Record<string, unknown>[];
  malformedLines: number;
  files: number;
}

/** A rotation file name from a time: ISO-8601 with `:` made `-`, so names sort by time. */
export function rotationName(ms: number, attempt = 0): string {
  const stamp = new Date(ms).toISOString().replace(/:/g, "-");
  return attempt === 0 ? `${stamp}.jsonl` : `${stamp}-${attempt}.jsonl`;
}

/** Joins path parts with "/" (paths inside the tree are built from sanitised names only). */
export function join(...parts: string[]): string {
  return parts.join("/").replace(/\/{2,}/g, "/");
}

/** The mirror tree under one root. */
export class MirrorTree {
  private active = new Map<string, Active>();

  constructor(
    private readonly fs: FsAdapter,
    readonly root: string,
    private readonly maxBytes: number,
    private readonly clock: () => number,
    private readonly sync = true,
  ) {}

  /** The directory of a session's main conversation, or of one of its subagents. */
  dirFor(sessionDir: string, agentDir: string | null): string {
    return agentDir === null ? join(this.root, sessionDir) : join(this.root, sessionDir, "subagents", `agent-${agentDir}`);
  }

  /** The `*.jsonl` files directly in `dir`, oldest first (names sort by time). */
  async files(dir: string): Promise<string[]> {
    const entries = await this.fs.readdir(dir);
    return entries.filter((e) => e.isFile && e.name.endsWith(".jsonl")).map((e) => e.name).sort().map((n) => join(dir, n));
  }

  /** Reads every record of a directory; lines that do not parse (a torn tail) are counted, not returned. */
  async read(dir: string): Promise<ReadBack> {
    const files = await this.files(dir);
    const records: Record<string, unknown>[] = [];
    let malformedLines = 0;
    for (const file of files) {
      const text = await this.fs.readText(file);
      for (const line of text.split("\n")) {
        if (line.trim() === "") continue;
        try {
          const parsed = JSON.parse(line);
          if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) records.push(parsed);
          else malformedLines++;
        } catch {
          malformedLines++;
        }
      }
    }
    return { records, malformedLines, files: files.length };
  }

  /** Forgets what it knew of a directory's active file (after a sweep removed files). */
  forget(dir: string): void {
    this.active.delete(dir);
  }

  /** Appends `text` (whole JSON lines) to the directory's active file in one write, rotating first when full. */
  async append(dir: string, text: string): Promise<AppendResult> {
    let active = this.active.get(dir) ?? (await this.discover(dir));
    let prefix = "";
    let rotated = false;
    if (active !== null && active.size > 0 && active.size + Buffer.byteLength(text) > this.maxBytes) {
      active = null;
      rotated = true;
    }
    if (active === null) {
      const created = await this.create(dir, text);
      this.active.set(dir, created);
      return { path: created.path, bytes: created.size, rotated, created: true };
    }
    if (!active.endsClean) {
      // A torn final line (a crash mid-write) must not swallow the next record: start on a fresh line.
      prefix = "\n";
    }
    const data = prefix + text;
    try {
      await this.fs.append(active.path, data, this.sync);
    } catch (error) {
      this.active.delete(dir); // what reached the disk is unknown now: look again next time
      throw error;
    }
    const bytes = Buffer.byteLength(data);
    this.active.set(dir, { path: active.path, size: active.size + bytes, endsClean: true });
    return { path: active.path, bytes, rotated, created: false };
  }

  /** Finds the newest file of a directory and its size, or null when there is none. */
  private async discover(dir: string): Promise<Active | null> {
    const files = await this.files(dir);
    const newest = files.at(-1);
    if (newest === undefined) return null;
    const info = await this.fs.lstat(newest);
    if (info === null || !info.isFile) return null;
    const endsClean = info.size === 0 || (await this.fs.lastByte(newest)) === NEWLINE;
    return { path: newest, size: info.size, endsClean };
  }

  /** Creates a new rotation file holding `text`, never overwriting one that exists. */
  private async create(dir: string, text: string): Promise<Active> {
    await this.fs.mkdir(dir, DIR_MODE);
    const now = this.clock();
    for (let attempt = 0; attempt < 1000; attempt++) {
      const path = join(dir, rotationName(now, attempt));
      if (await this.fs.createExclusive(path, text, this.sync)) return { path, size: Buffer.byteLength(text), endsClean: true };
    }
    throw new Error(`could not create a new mirror file in ${dir}`);
  }
}
