// What the tap may write into (docs/RELIABILITY.md "Trust boundaries"): only directories and files owned by its own user, writable by nobody else, reached
// without following a symbolic link.
import process from "node:process";
import { type EntryInfo, type FsAdapter, unless } from "./fs-adapter.ts";

export const DIR_MODE = 0o700;

export function currentUid(): number {
  return typeof process.getuid === "function" ? process.getuid() : -1;
}

export class UnsafePathError extends Error {
  override name = "UnsafePathError";
  readonly code = "EUNSAFE";
}

/** Why `info` is not a `want` this user may write into ("is a symbolic link"), or null. */
export function untrusted(info: EntryInfo, want: "directory" | "file", uid = currentUid()): string | null {
  if (info.isSymbolicLink) return "is a symbolic link";
  if (want === "directory" && !info.isDirectory) return "is not a directory";
  if (want === "file" && !info.isFile) return "is not a regular file";
  if (uid < 0 || info.uid < 0) return null; // no owners on this platform
  if (info.uid !== uid) return `belongs to another user (uid ${info.uid})`;
  if ((info.mode & 0o022) !== 0) return `is writable by other users (mode ${(info.mode & 0o777).toString(8)})`;
  return null;
}

export function checkTrusted(path: string, info: EntryInfo, want: "directory" | "file"): void {
  const why = untrusted(info, want);
  if (why !== null) throw new UnsafePathError(`${path} ${why}; nothing was written`);
}

/** `path`'s entry, made a 0700 directory first when there is none (null: gone again at once). */
async function lstatOrMake(fs: FsAdapter, path: string): Promise<EntryInfo | null> {
  const info = await fs.lstat(path);
  if (info !== null) return info;
  await unless(fs.mkdir(path, DIR_MODE), "EEXIST", undefined);
  return await fs.lstat(path);
}

/** Makes `dir` (below `root`, or `root` itself) exist as trusted directories all the way down, creating what is missing 0700. */
export async function ensureTrustedDir(fs: FsAdapter, root: string, dir: string): Promise<void> {
  if (dir !== root && !dir.startsWith(root + "/")) throw new UnsafePathError(`${dir} is not under the mirror root`);
  const parts = dir === root ? [] : dir.slice(root.length + 1).split("/");
  let path = root;
  for (const part of ["", ...parts]) {
    path = part === "" ? path : `${path}/${part}`;
    const info = await lstatOrMake(fs, path);
    if (info === null) throw new UnsafePathError(`${path} vanished while being created; nothing was written`);
    checkTrusted(path, info, "directory");
  }
}

/** Outside the root (a spool under the system temp dir, the proxy's CA), one level: created 0700, or refused naming why. */
export async function ensurePrivateDir(fs: FsAdapter, path: string): Promise<void> {
  const info = await lstatOrMake(fs, path);
  const refuse = (why: string) => Object.assign(new Error(`${path} ${why}; not used`), { code: "EUNSAFE" });
  if (info === null) throw refuse("vanished while being created");
  const why = untrusted(info, "directory");
  if (why !== null) throw refuse(why);
  // Stricter than the mirror tree: this directory sits where others can look, so it must not be readable either.
  if (currentUid() >= 0 && (info.mode & 0o077) !== 0) throw refuse(`is open to other users (mode ${(info.mode & 0o777).toString(8)})`);
}
