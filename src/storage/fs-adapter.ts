// The filesystem adapter: the only module that touches `node:fs`.
import { constants, promises as fsp, watch } from "node:fs";
import process from "node:process";

/**
 * Opens never follow a final symlink where the platform can say so; Windows has no O_NOFOLLOW, and there
 * the tree's lstat checks before each open are what keeps writes off symlinks.
 */
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
/** A FIFO opened for reading waits for a writer unless told not to (and so would a thread of the pool). */
const NONBLOCK = constants.O_NONBLOCK ?? 0;

/** A path that is not a regular file where one is read (a FIFO, a device, a socket): never read. */
export class NotRegularFileError extends Error {
  override name = "NotRegularFileError";
  readonly code = "ENOTREG";
}

/** What a file that is not a regular one is, in a few words. */
function kindOf(s: { isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean; isDirectory(): boolean }): string {
  return s.isFIFO()
    ? "a FIFO"
    : s.isCharacterDevice() || s.isBlockDevice()
    ? "a device"
    : s.isSocket()
    ? "a socket"
    : s.isDirectory()
    ? "a directory"
    : "not a regular file";
}

/** What `lstat` reports; never follows a symlink. */
export interface EntryInfo {
  isFile: boolean;
  isDirectory: boolean;
  isSymbolicLink: boolean;
  size: number;
  mtimeMs: number;
  mode: number;
  dev: number;
  ino: number;
  /** The owner's user id (-1 where the platform has none, e.g. Windows). */
  uid: number;
}

/** A directory entry, typed without following links. */
export interface DirEntry {
  name: string;
  isFile: boolean;
  isDirectory: boolean;
  isSymbolicLink: boolean;
}

/** The operations the mirror needs, nothing more. */
export interface FsAdapter {
  /**
   * False where files have no POSIX permission bits (Windows: modes read back as 0666/0444 whatever was
   * asked, and the user's profile ACL is what keeps others out); checks of 0600/0700 are skipped there.
   */
  posixModes?: boolean;
  /** Creates a directory and its parents with `mode`. */
  mkdir(path: string, mode: number): Promise<void>;
  /**
   * Appends all of `data` (creating the file 0600), then fsyncs when `sync`. All or nothing: a write the
   * disk cuts short rejects (ShortWriteError) and what it appended is cut back off.
   */
  append(path: string, data: string, sync: boolean): Promise<void>;
  /** Appends all of `data` to a file that exists, as `append` does; false (nothing written) when it does not. */
  appendExisting(path: string, data: string, sync: boolean): Promise<boolean>;
  /** Creates `path` with all of `data` only if it does not exist; false when it already did. A write that fails removes the file it made. */
  createExclusive(path: string, data: string, sync: boolean): Promise<boolean>;
  /** Reads a whole file as UTF-8. */
  readText(path: string): Promise<string>;
  /** lstat, or null when the path does not exist. */
  lstat(path: string): Promise<EntryInfo | null>;
  /** Lists a directory ([] when it does not exist). */
  readdir(path: string): Promise<DirEntry[]>;
  /** Removes a file. */
  unlink(path: string): Promise<void>;
  /** Removes an empty directory. */
  rmdir(path: string): Promise<void>;
  /** Renames a file. */
  rename(from: string, to: string): Promise<void>;
  /** Sets a mode. */
  chmod(path: string, mode: number): Promise<void>;
  /**
   * Gives the file at `existing` a second name `path` (a hard link), never replacing anything: false when
   * `path` already exists. Publication without overwrite: write aside, then link into place.
   */
  link(existing: string, path: string): Promise<boolean>;
  /** Free and total bytes of the filesystem holding `path` (free as an unprivileged user sees it). */
  statfs(path: string): Promise<{ freeBytes: number; totalBytes: number }>;
  /**
   * Reads bytes `[start, end)` of a file (to its end when `end` is omitted): a regular file only, never
   * through a final symlink (ELOOP), never waiting on a FIFO (NotRegularFileError), however large the file
   * only the range in memory.
   */
  readRange(path: string, start: number, end?: number): Promise<Uint8Array>;
  /** Cuts a file to `size` bytes (never following a symlink), then fsyncs it. */
  truncate(path: string, size: number): Promise<void>;
  /** True when this process may read and write `path`. */
  canReadWrite(path: string): Promise<boolean>;
  /**
   * Tells `onChange` the name of each entry of directory `path` that changes (null: unknown), until the returned
   * close is called or `onError` is; null when the directory cannot be watched (callers then poll).
   */
  watch?(path: string, onChange: (name: string | null) => void, onError: () => void): (() => void) | null;
}

/** True for "no such file or directory". */
export function isNotFound(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === "ENOENT";
}

/** Removes a file; one already gone is fine. */
export async function removeIfThere(fs: FsAdapter, path: string): Promise<void> {
  try {
    await fs.unlink(path);
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/** A whole file as UTF-8, or null when it is not there (gone meanwhile). */
export async function readIfThere(fs: FsAdapter, path: string): Promise<string | null> {
  try {
    return await fs.readText(path);
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/**
 * One write(2) on an open file: writes what it can of `bytes` and resolves with how many bytes that was.
 * The seam under every write the adapter makes, so a test can act as a nearly full disk on every runtime.
 */
export type WriteSome = (path: string, handle: fsp.FileHandle, bytes: Uint8Array) => Promise<number>;

/** The kernel's write, through the runtime's FileHandle. */
export const kernelWrite: WriteSome = async (_path, handle, bytes) => (await handle.write(bytes, 0, bytes.length)).bytesWritten;

/**
 * Opens `path` (a new file 0600) and writes `data` whole; false, nothing written, when opening fails with
 * `unless`. A write that fails leaves the file as it was (docs/DESIGN.md "Writes"): an appended part is cut
 * back off, a file this call created exclusively is removed.
 */
async function openAndWrite(
  write: WriteSome,
  path: string,
  flags: number,
  data: string,
  sync: boolean,
  unless: "ENOENT" | "EEXIST" | null,
): Promise<boolean> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(path, flags, 0o600);
  } catch (error) {
    if (unless !== null && (error as { code?: string }).code === unless) return false;
    throw error;
  }
  const created = (flags & constants.O_EXCL) !== 0;
  try {
    const file: WritableFile = {
      write: (bytes) => write(path, handle, bytes),
      size: async () => (await handle.stat()).size,
      truncate: (size) => handle.truncate(size),
      datasync: () => handle.datasync(),
    };
    await writeWhole(file, path, data, sync, created);
  } catch (error) {
    await handle.close().catch(() => undefined);
    // Exclusive: nobody else has the file, and a part of it (or none) is never what the caller asked for.
    if (created) await fsp.unlink(path).catch(() => undefined);
    throw error;
  }
  await handle.close();
  return true;
}

/** The adapter over `node:fs/promises`, every write going through `write` (the kernel's unless a test says otherwise). */
export function createNodeFs(write: WriteSome = kernelWrite): FsAdapter {
  return {
    posixModes: process.platform !== "win32",
    async mkdir(path, mode) {
      await fsp.mkdir(path, { recursive: true, mode });
    },
    async append(path, data, sync) {
      await openAndWrite(write, path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | NOFOLLOW, data, sync, null);
    },
    appendExisting(path, data, sync) {
      return openAndWrite(write, path, constants.O_WRONLY | constants.O_APPEND | NOFOLLOW, data, sync, "ENOENT");
    },
    createExclusive(path, data, sync) {
      return openAndWrite(write, path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, data, sync, "EEXIST");
    },
    async readText(path) {
      return await fsp.readFile(path, "utf8");
    },
    async lstat(path) {
      try {
        const s = await fsp.lstat(path);
        return {
          isFile: s.isFile(),
          isDirectory: s.isDirectory(),
          isSymbolicLink: s.isSymbolicLink(),
          size: s.size,
          mtimeMs: s.mtimeMs,
          mode: s.mode,
          dev: s.dev,
          ino: s.ino,
          uid: typeof s.uid === "number" ? s.uid : -1,
        };
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },
    async readdir(path) {
      try {
        const entries = await fsp.readdir(path, { withFileTypes: true });
        return entries.map((e) => ({
          name: String(e.name),
          isFile: e.isFile(),
          isDirectory: e.isDirectory(),
          isSymbolicLink: e.isSymbolicLink(),
        }));
      } catch (error) {
        if (isNotFound(error)) return [];
        throw error;
      }
    },
    async unlink(path) {
      await fsp.unlink(path);
    },
    async rmdir(path) {
      await fsp.rmdir(path);
    },
    async rename(from, to) {
      await fsp.rename(from, to);
    },
    async chmod(path, mode) {
      await fsp.chmod(path, mode);
    },
    async link(existing, path) {
      try {
        await fsp.link(existing, path);
        return true;
      } catch (error) {
        if ((error as { code?: string }).code === "EEXIST") return false;
        throw error;
      }
    },
    async readRange(path, start, end) {
      const handle = await fsp.open(path, constants.O_RDONLY | NOFOLLOW | NONBLOCK);
      try {
        const stat = await handle.stat();
        // Checked on the descriptor itself: whatever the path was swapped for since its lstat.
        if (!stat.isFile()) throw new NotRegularFileError(`${path} is ${kindOf(stat)}; not read`);
        const size = stat.size;
        const stop = Math.min(end ?? size, size);
        const buffer = new Uint8Array(Math.max(0, stop - start));
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
    async canReadWrite(path) {
      try {
        await fsp.access(path, constants.R_OK | constants.W_OK);
        return true;
      } catch {
        return false;
      }
    },
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

/** The adapter over the real filesystem. */
export const nodeFs: FsAdapter = createNodeFs();

// Writing whole (docs/DESIGN.md "Writes"): a filling disk takes part of a write and says so only by the count (Bun, Node), or the
// runtime throws after writing part (Deno); either way the write goes on until every byte is taken, or fails leaving no part behind.
/** What writing whole needs of an open file. */
export interface WritableFile {
  /** One write of what it can of `bytes`; resolves with how many bytes that was. */
  write(bytes: Uint8Array): Promise<number>;
  size(): Promise<number>;
  truncate(size: number): Promise<void>;
  datasync(): Promise<void>;
}

/**
 * A write that stopped part-way: the kernel took some of the bytes, then nothing more (a disk that filled
 * up). The part that reached the file has been cut back off, or the file removed when the write made it.
 */
export class ShortWriteError extends Error {
  override name = "ShortWriteError";
  /** The next write's own error code (ENOSPC), or EIO when it wrote nothing and said nothing. */
  readonly code: string;

  constructor(path: string, written: number, total: number, cause: unknown) {
    const code = (cause as { code?: unknown } | null)?.code;
    const why = cause === null ? "the next write wrote nothing" : String((cause as Error).message ?? cause).replace(/^[A-Z]+: /, "");
    super(`${typeof code === "string" ? code : "EIO"}: wrote ${written} of ${total} bytes to ${path} (${why})`);
    this.code = typeof code === "string" ? code : "EIO";
  }
}

/**
 * Writes all of `data` to `file`, one write after another until every byte is taken, and fsyncs when
 * asked. A write that stops part-way is a ShortWriteError, and what it appended is cut back off — unless
 * more is there than it could have written (another process appended meanwhile; the next catch-up moves
 * the torn line aside). `created`: the file is new and this write's alone (the caller removes it).
 */
export async function writeWhole(file: WritableFile, path: string, data: string, sync: boolean, created: boolean): Promise<void> {
  const bytes = new TextEncoder().encode(data);
  const before = created ? 0 : await file.size();
  let done = 0;
  try {
    while (done < bytes.length) {
      const wrote = await file.write(bytes.subarray(done));
      if (!(wrote > 0)) throw new ShortWriteError(path, done, bytes.length, null);
      done += wrote;
    }
  } catch (error) {
    // Deno's write throws after writing part, so the file's size says what reached it.
    const reached = await file.size().then((size) => size - before, () => done);
    if (!created && reached > 0 && reached <= bytes.length) await file.truncate(before).catch(() => undefined);
    if (error instanceof ShortWriteError || reached <= 0) throw error;
    throw new ShortWriteError(path, reached, bytes.length, error);
  }
  if (sync) await file.datasync();
}
