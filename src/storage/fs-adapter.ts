// The only module that touches `node:fs` (docs/DESIGN.md "Writes").
import { constants, promises as fsp, type Stats, watch } from "node:fs";
import process from "node:process";

// Windows has no O_NOFOLLOW: there the tree's lstat checks before each open keep writes off symlinks.
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
// A FIFO opened for reading waits for a writer unless told not to.
const NONBLOCK = constants.O_NONBLOCK ?? 0;
const APPEND = constants.O_WRONLY | constants.O_APPEND | NOFOLLOW;

export class NotRegularFileError extends Error {
  override name = "NotRegularFileError";
  readonly code = "ENOTREG";
}

const KINDS = { isFIFO: "a FIFO", isCharacterDevice: "a device", isBlockDevice: "a device", isSocket: "a socket", isDirectory: "a directory" } as const;
const kindOf = (s: Stats) => Object.entries(KINDS).find(([is]) => s[is as keyof typeof KINDS]())?.[1] ?? "not a regular file";

export interface EntryInfo {
  isFile: boolean;
  isDirectory: boolean;
  isSymbolicLink: boolean;
  size: number;
  mtimeMs: number;
  mode: number;
  dev: number;
  ino: number;
  /** -1 where the platform has none (Windows). */
  uid: number;
}

export interface DirEntry {
  name: string;
  isFile: boolean;
  isDirectory: boolean;
  isSymbolicLink: boolean;
}

export interface FsAdapter {
  /** False on Windows: modes read back as 0666/0444 whatever was asked, so checks of 0600/0700 are skipped. */
  posixModes?: boolean;
  mkdir(path: string, mode: number): Promise<void>;
  /** All or nothing (creating the file 0600): a write the disk cuts short rejects (ShortWriteError) and its part is cut back off. */
  append(path: string, data: string, sync: boolean): Promise<void>;
  /** As `append`, to a file that exists; false (nothing written) when it does not. */
  appendExisting(path: string, data: string, sync: boolean): Promise<boolean>;
  /** False when `path` already exists; a write that fails removes the file it made. */
  createExclusive(path: string, data: string, sync: boolean): Promise<boolean>;
  readText(path: string): Promise<string>;
  lstat(path: string): Promise<EntryInfo | null>;
  readdir(path: string): Promise<DirEntry[]>;
  unlink(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  chmod(path: string, mode: number): Promise<void>;
  /** A hard link that never replaces: false when `path` already exists (publication without overwrite). */
  link(existing: string, path: string): Promise<boolean>;
  statfs(path: string): Promise<{ freeBytes: number; totalBytes: number }>;
  /** Bytes `[start, end)` of a regular file, never through a final symlink, never waiting on a FIFO (NotRegularFileError). */
  readRange(path: string, start: number, end?: number): Promise<Uint8Array>;
  truncate(path: string, size: number): Promise<void>;
  canReadWrite(path: string): Promise<boolean>;
  /** Names each entry of `path` that changes (null: unknown) until closed or `onError`; null when it cannot be watched (callers poll). */
  watch?(path: string, onChange: (name: string | null) => void, onError: () => void): (() => void) | null;
}

/** The same entry as `a` (a symbolic link never is); with `content`, unchanged in size and time too. */
export function sameFile(a: EntryInfo, b: EntryInfo | null, content = false): boolean {
  const same = b !== null && !b.isSymbolicLink && a.dev === b.dev && a.ino === b.ino && a.isFile === b.isFile && a.isDirectory === b.isDirectory;
  return same && (!content || (a.size === b.size && a.mtimeMs === b.mtimeMs));
}

export function isNotFound(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === "ENOENT";
}

/** What `work` resolves with, or `value` when it fails with one of `codes` (ENOENT: the path is not there). */
export async function unless<T, V>(work: Promise<T>, codes: string | readonly string[] | null, value: V): Promise<T | V> {
  try {
    return await work;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === "string" && (codes === code || (Array.isArray(codes) && codes.includes(code)))) return value;
    throw error;
  }
}

export const removeIfThere = (fs: FsAdapter, path: string): Promise<void> => unless(fs.unlink(path), "ENOENT", undefined);
export const readIfThere = (fs: FsAdapter, path: string): Promise<string | null> => unless(fs.readText(path), "ENOENT", null);

/** One write(2): resolves with how many bytes it took. The seam a test uses to act as a nearly full disk. */
export type WriteSome = (path: string, handle: fsp.FileHandle, bytes: Uint8Array) => Promise<number>;

export const kernelWrite: WriteSome = async (_path, handle, bytes) => (await handle.write(bytes, 0, bytes.length)).bytesWritten;

// A filling disk takes part of a write and says so only by the count (Bun, Node), or throws after writing part (Deno). A part is cut
// back off unless more is there than this write could have made (another process appended; the next catch-up moves the torn line aside).
/** Writes `data` whole to `path` (a new file 0600); false, nothing written, when opening fails with `refused`. */
async function openAndWrite(
  write: WriteSome,
  path: string,
  flags: number,
  data: string,
  sync: boolean,
  refused: "ENOENT" | "EEXIST" | null,
): Promise<boolean> {
  const handle = await unless(fsp.open(path, flags, 0o600), refused, null);
  if (handle === null) return false;
  const created = (flags & constants.O_EXCL) !== 0;
  const bytes = new TextEncoder().encode(data);
  let done = 0;
  try {
    const before = created ? 0 : (await handle.stat()).size;
    try {
      while (done < bytes.length) {
        const wrote = await write(path, handle, bytes.subarray(done));
        if (!(wrote > 0)) throw new ShortWriteError(path, done, bytes.length, null);
        done += wrote;
      }
    } catch (error) {
      // Deno's write throws after writing part, so the file's size says what reached it.
      const reached = await handle.stat().then((s) => s.size - before, () => done);
      if (!created && reached > 0 && reached <= bytes.length) await handle.truncate(before).catch(() => undefined);
      if (error instanceof ShortWriteError || reached <= 0) throw error;
      throw new ShortWriteError(path, reached, bytes.length, error);
    }
    if (sync) await handle.datasync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    // Exclusive: nobody else has the file, and a part of it (or none) is never what the caller asked for.
    if (created) await fsp.unlink(path).catch(() => undefined);
    throw error;
  }
  await handle.close();
  return true;
}

export function createNodeFs(write: WriteSome = kernelWrite): FsAdapter {
  return {
    posixModes: process.platform !== "win32",
    mkdir: (path, mode) => fsp.mkdir(path, { recursive: true, mode }).then(() => {}),
    append: (path, data, sync) => openAndWrite(write, path, APPEND | constants.O_CREAT, data, sync, null).then(() => {}),
    appendExisting: (path, data, sync) => openAndWrite(write, path, APPEND, data, sync, "ENOENT"),
    createExclusive: (path, data, sync) =>
      openAndWrite(write, path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, data, sync, "EEXIST"),
    readText: (path) => fsp.readFile(path, "utf8"),
    lstat: (path) =>
      unless(
        fsp.lstat(path).then((s) => ({
          isFile: s.isFile(),
          isDirectory: s.isDirectory(),
          isSymbolicLink: s.isSymbolicLink(),
          size: s.size,
          mtimeMs: s.mtimeMs,
          mode: s.mode,
          dev: s.dev,
          ino: s.ino,
          uid: typeof s.uid === "number" ? s.uid : -1,
        })),
        "ENOENT",
        null,
      ),
    readdir: async (path) =>
      (await unless(fsp.readdir(path, { withFileTypes: true }), "ENOENT", [])).map((e) => ({
        name: String(e.name),
        isFile: e.isFile(),
        isDirectory: e.isDirectory(),
        isSymbolicLink: e.isSymbolicLink(),
      })),
    unlink: (path) => fsp.unlink(path),
    rmdir: (path) => fsp.rmdir(path),
    rename: (from, to) => fsp.rename(from, to),
    chmod: (path, mode) => fsp.chmod(path, mode),
    link: (existing, path) => unless(fsp.link(existing, path).then(() => true), "EEXIST", false),
    async readRange(path, start, end) {
      const handle = await fsp.open(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
      try {
        const stat = await handle.stat();
        // Checked on the descriptor itself: whatever the path was swapped for since its lstat.
        if (!stat.isFile()) throw new NotRegularFileError(`${path} is ${kindOf(stat)}; not read`);
        const buffer = new Uint8Array(Math.max(0, Math.min(end ?? stat.size, stat.size) - start));
        let offset = 0;
        while (offset < buffer.length) {
          const { bytesRead } = await handle.read(buffer, offset, buffer.length - offset, start + offset);
          if (bytesRead === 0) break;
          offset += bytesRead;
        }
        return buffer.subarray(0, offset);
      } finally {
        await handle.close();
      }
    },
    async truncate(path, size) {
      const handle = await fsp.open(path, constants.O_WRONLY | NOFOLLOW);
      try {
        await handle.truncate(size);
        await handle.datasync();
      } finally {
        await handle.close();
      }
    },
    canReadWrite: (path) => fsp.access(path, constants.R_OK | constants.W_OK).then(() => true, () => false),
    watch(path, onChange, onError) {
      try {
        // Deno ignores `persistent: false`: a watcher keeps its process alive until closed.
        const w = watch(path, { persistent: false }, (_event, name) => onChange(name === null ? null : String(name)));
        w.on("error", () => (w.close(), onError()));
        return () => w.close();
      } catch {
        return null; // gone, or out of watches: Bun and Node throw here, Deno reports an error event
      }
    },
    async statfs(path) {
      const s = await fsp.statfs(path);
      return { freeBytes: Number(s.bavail) * Number(s.bsize), totalBytes: Number(s.blocks) * Number(s.bsize) };
    },
  };
}

export const nodeFs: FsAdapter = createNodeFs();

/** A write that stopped part-way (a disk that filled up); its part was cut back off, or the file removed. */
export class ShortWriteError extends Error {
  override name = "ShortWriteError";
  /** The next write's own code (ENOSPC), or EIO when it wrote nothing and said nothing. */
  readonly code: string;

  constructor(path: string, written: number, total: number, cause: unknown) {
    const code = (cause as { code?: unknown } | null)?.code;
    const why = cause === null ? "the next write wrote nothing" : String((cause as Error).message ?? cause).replace(/^[A-Z]+: /, "");
    super(`${typeof code === "string" ? code : "EIO"}: wrote ${written} of ${total} bytes to ${path} (${why})`);
    this.code = typeof code === "string" ? code : "EIO";
  }
}
