/**
 * Temporary files a killed process leaves behind (docs/RELIABILITY.md "Trust boundaries"): a `.staging`
 * file of a publish, a `.repair-…` file of `verify --repair`, a restore's temporary file beside the
 * transcript it was writing. Each name carries its writer (pid, kernel start time, a hash of the host), so
 * the next start can prove one stale — its writer is dead — and remove it; nothing else is ever touched:
 * not a link, not another user's file, not one whose writer may live (another host's, a pid alive with the
 * same start time). Names made before writers were named are stale only once they are a day old.
 */
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import process from "node:process";
import type { FsAdapter } from "./fs-adapter.ts";
import { join } from "./paths.ts";
import { ownerAlive, processStart } from "./process-identity.ts";

/** How old an unnamed leftover must be to count as stale: no publish, repair or restore takes that long. */
export const UNNAMED_STALE_MS = 24 * 60 * 60 * 1000;

const hostTag = () => createHash("sha256").update(hostname()).digest("hex").slice(0, 8);

/** This process as a name fragment: `w<pid>-<start>-<host>` (characters every filesystem takes). */
export async function writerTag(fs: FsAdapter): Promise<string> {
  return `w${process.pid}-${(await processStart(fs, process.pid)) ?? "x"}-${hostTag()}`;
}

/** The writer a name carries (`w<pid>-<start>-<host>`), or null when it carries none. */
export function writerOf(name: string): { pid: number; start: string | null; host: string } | null {
  const m = /(?:^|[.-])w(\d+)-(\d+|x)-([0-9a-f]{8})(?=[.-]|$)/.exec(name);
  return m === null ? null : { pid: Number(m[1]), start: m[2] === "x" ? null : m[2], host: m[3] };
}

/** True only when the writer a name carries is provably gone: this host's, and its pid dead or reused. */
async function writerGone(fs: FsAdapter, writer: { pid: number; start: string | null; host: string }): Promise<boolean> {
  if (writer.host !== hostTag()) return false;
  return !(await ownerAlive(fs, { pid: writer.pid, start: writer.start, host: hostname() }));
}

/**
 * Removes the leftovers in `dir` whose names `isLeftover` accepts and that are provably stale (see the
 * module comment); returns the names removed. Never throws: a leftover that cannot be removed stays.
 */
export async function removeLeftovers(fs: FsAdapter, dir: string, isLeftover: (name: string) => boolean, now: number): Promise<string[]> {
  const removed: string[] = [];
  const uid = typeof process.getuid === "function" ? process.getuid() : -1;
  for (const entry of await fs.readdir(dir).catch(() => [])) {
    if (!entry.isFile || !isLeftover(entry.name)) continue;
    const path = join(dir, entry.name);
    try {
      const info = await fs.lstat(path);
      if (info === null || !info.isFile || (uid >= 0 && info.uid !== uid)) continue;
      const writer = writerOf(entry.name);
      const stale = writer === null ? now - info.mtimeMs >= UNNAMED_STALE_MS : await writerGone(fs, writer);
      if (!stale) continue;
      await fs.unlink(path);
      removed.push(entry.name);
    } catch {
      // gone meanwhile, or not ours to remove: it stays
    }
  }
  return removed;
}
