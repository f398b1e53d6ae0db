// Publishing a whole file safely (restore, export --out): the bytes are written and fsynced under a temporary name beside the target (0600), then put in place
// in one step.
import { type EntryInfo, type FsAdapter, removeIfThere as discard } from "./fs-adapter.ts";
import { removeLeftovers, writerTag } from "./process-identity.ts";

/** What publishing did. */
export type Published =
  | { kind: "created"; path: string }
  | { kind: "replaced"; path: string; backup: string }
  /** A file appeared at the target meanwhile: nothing was written there. */
  | { kind: "appeared"; path: string }
  /** The target changed since it was judged: nothing was replaced. */
  | { kind: "changed"; path: string };

/** Error codes that mean "this filesystem does not do hard links". */
const NO_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK"]);

/** The directory part and the name of a path. */
function split(path: string): { dir: string; name: string } {
  const at = path.lastIndexOf("/");
  return { dir: at < 0 ? "." : path.slice(0, at) || "/", name: path.slice(at + 1) };
}

/**
 * Writes `data` under a fresh temporary name beside `path` (0600, fsynced), one that names this process;
 * returns that name. What a killed writer left beside `path` is removed first, once provably stale
 * (leftovers.ts): a restore killed mid-write left a 27 MB file in Claude Code's project directory.
 */
async function writeAside(fs: FsAdapter, path: string, data: string): Promise<string> {
  const { dir, name } = split(path);
  const prefix = `.${name}.sessiontap-`;
  await removeLeftovers(fs, dir, (n) => n.startsWith(prefix) && n.endsWith(".tmp"), Date.now());
  const writer = await writerTag(fs);
  for (let attempt = 0; attempt < 100; attempt++) {
    const tmp = `${dir}/${prefix}${writer}-${crypto.randomUUID().slice(0, 8)}.tmp`;
    if (await fs.createExclusive(tmp, data, true)) return tmp;
  }
  throw new Error(`could not create a temporary file beside ${path}`);
}

/**
 * Throws unless the file at `path` holds exactly the bytes of `data`: checked before a file is put in
 * place, so a write the disk cut short never replaces (or becomes) what the caller meant to keep.
 */
export async function checkWhole(fs: FsAdapter, path: string, data: string): Promise<void> {
  const size = (await fs.lstat(path))?.size ?? 0;
  const expected = new TextEncoder().encode(data).length;
  if (size !== expected) throw Object.assign(new Error(`${path} holds ${size} of the ${expected} bytes written to it`), { code: "EIO" });
}

/** Links `from` to `to` without overwriting; falls back to an exclusive copy where links are not supported. */
async function linkOrCopy(fs: FsAdapter, from: string, to: string): Promise<boolean> {
  try {
    return await fs.link(from, to);
  } catch (error) {
    if (!NO_LINKS.has((error as { code?: string }).code ?? "")) throw error;
    return await fs.createExclusive(to, await fs.readText(from), true);
  }
}

/** Publishes `data` at `path`, which must not exist. */
export async function publishNew(fs: FsAdapter, path: string, data: string): Promise<Published> {
  const tmp = await writeAside(fs, path, data);
  try {
    await checkWhole(fs, tmp, data);
    return (await linkOrCopy(fs, tmp, path)) ? { kind: "created", path } : { kind: "appeared", path };
  } finally {
    await discard(fs, tmp);
  }
}

/** `<name>.bak-<UTC timestamp>` for a time: `20261130T033317Z`. */
export function backupName(path: string, nowMs: number, attempt = 0): string {
  const stamp = new Date(nowMs).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  return `${path}.bak-${stamp}${attempt === 0 ? "" : `-${attempt}`}`;
}

/** True when `now` is still the file `judged` described (same inode, size and mtime). */
function unchanged(judged: EntryInfo, now: EntryInfo | null): boolean {
  return now !== null && now.isFile && now.dev === judged.dev && now.ino === judged.ino && now.size === judged.size && now.mtimeMs === judged.mtimeMs;
}

/** Backs `path` up beside itself, then replaces it with `data`; `judged` is what the caller examined. */
export async function replaceWithBackup(fs: FsAdapter, path: string, data: string, judged: EntryInfo, nowMs: number): Promise<Published> {
  const tmp = await writeAside(fs, path, data);
  try {
    let backup: string | null = null;
    for (let attempt = 0; attempt < 100 && backup === null; attempt++) {
      const name = backupName(path, nowMs, attempt);
      if (await linkOrCopy(fs, path, name)) backup = name;
    }
    if (backup === null) throw new Error(`could not name a backup of ${path}`);
    if (!unchanged(judged, await fs.lstat(path))) {
      await discard(fs, backup); // it names a file we did not judge; the original stays where it was
      return { kind: "changed", path };
    }
    try {
      await checkWhole(fs, tmp, data); // until here the original is untouched, and so it stays
    } catch (error) {
      await discard(fs, backup);
      throw error;
    }
    await fs.rename(tmp, path);
    return { kind: "replaced", path, backup };
  } finally {
    await discard(fs, tmp);
  }
}

/** Writes `data` to `path` atomically, replacing what is there (export --out). */
export async function replaceFile(fs: FsAdapter, path: string, data: string): Promise<void> {
  const tmp = await writeAside(fs, path, data);
  try {
    await checkWhole(fs, tmp, data);
    await fs.rename(tmp, path);
  } finally {
    await discard(fs, tmp);
  }
}
