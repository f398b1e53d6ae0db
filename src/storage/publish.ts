// Publishing a whole file safely (restore, export --out, the binding key): written and fsynced under a temporary name beside the target
// (0600), then put in place in one step.
import { basename, dirname } from "node:path/posix";
import { type EntryInfo, type FsAdapter, removeIfThere as discard, sameFile, unless } from "./fs-adapter.ts";
import { removeLeftovers, writerTag } from "./dir-lock.ts";

export type Published =
  | { kind: "created"; path: string }
  | { kind: "replaced"; path: string; backup: string }
  /** A file appeared at the target meanwhile: nothing was written there. */
  | { kind: "appeared"; path: string }
  /** The target changed since it was judged: nothing was replaced. */
  | { kind: "changed"; path: string };

const NO_LINKS = ["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK"];

/** Runs `use` on `data` written whole beside `path` under a fresh name naming this process, removed afterwards; what a killed writer
 * left there goes first (a restore killed mid-write left 27 MB). Until `use` runs, the target is untouched. */
async function aside<T>(fs: FsAdapter, path: string, data: string, use: (tmp: string) => Promise<T>): Promise<T> {
  const dir = dirname(path);
  const prefix = `.${basename(path)}.sessiontap-`;
  await removeLeftovers(fs, dir, (n) => n.startsWith(prefix) && n.endsWith(".tmp"), Date.now());
  const writer = await writerTag(fs);
  for (let attempt = 0; attempt < 100; attempt++) {
    const tmp = `${dir}/${prefix}${writer}-${crypto.randomUUID().slice(0, 8)}.tmp`;
    if (!(await fs.createExclusive(tmp, data, true))) continue;
    try {
      await checkWhole(fs, tmp, data);
      return await use(tmp);
    } finally {
      await discard(fs, tmp);
    }
  }
  throw new Error(`could not create a temporary file beside ${path}`);
}

/** Checked before a file is put in place: a write the disk cut short never replaces (or becomes) what the caller meant to keep. */
export async function checkWhole(fs: FsAdapter, path: string, data: string): Promise<void> {
  const size = (await fs.lstat(path))?.size ?? 0;
  const expected = new TextEncoder().encode(data).length;
  if (size !== expected) throw Object.assign(new Error(`${path} holds ${size} of the ${expected} bytes written to it`), { code: "EIO" });
}

async function linkOrCopy(fs: FsAdapter, from: string, to: string): Promise<boolean> {
  return (await unless(fs.link(from, to), NO_LINKS, null)) ?? (await fs.createExclusive(to, await fs.readText(from), true));
}

export function publishNew(fs: FsAdapter, path: string, data: string): Promise<Published> {
  return aside(fs, path, data, async (tmp) => (await linkOrCopy(fs, tmp, path)) ? { kind: "created", path } : { kind: "appeared", path });
}

/** `<name>.bak-<UTC timestamp>` for a time: `20261130T033317Z`. */
export function backupName(path: string, nowMs: number, attempt = 0): string {
  const stamp = new Date(nowMs).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  return `${path}.bak-${stamp}${attempt === 0 ? "" : `-${attempt}`}`;
}

export function replaceWithBackup(fs: FsAdapter, path: string, data: string, judged: EntryInfo, nowMs: number): Promise<Published> {
  return aside(fs, path, data, async (tmp) => {
    let backup: string | null = null;
    for (let attempt = 0; attempt < 100 && backup === null; attempt++) {
      const name = backupName(path, nowMs, attempt);
      if (await linkOrCopy(fs, path, name)) backup = name;
    }
    if (backup === null) throw new Error(`could not name a backup of ${path}`);
    const now = await fs.lstat(path);
    if (!now?.isFile || !sameFile(judged, now, true)) {
      await discard(fs, backup); // it names a file we did not judge; the original stays where it was
      return { kind: "changed", path };
    }
    await fs.rename(tmp, path);
    return { kind: "replaced", path, backup } as const;
  });
}

export function replaceFile(fs: FsAdapter, path: string, data: string): Promise<void> {
  return aside(fs, path, data, (tmp) => fs.rename(tmp, path));
}
