// A process as a lock owner (docs/RELIABILITY.md "One live writer per conversation"): pid plus the kernel's start time, so a recycled pid
// is not taken for the owner (Linux /proc; elsewhere the pid alone).
import { hostname } from "node:os";
import process from "node:process";
import type { FsAdapter } from "./fs-adapter.ts";
import type { LockOwner } from "./dir-lock.ts";
import { createHash } from "node:crypto";
import { join } from "node:path/posix";

/** The start time of a process (field 22 of /proc/<pid>/stat), or null off Linux or where /proc is not there. */
export async function processStart(fs: FsAdapter, pid: number, platform: string = process.platform): Promise<string | null> {
  // Only Linux's /proc has this format; another system's /proc (or a file planted there) must not be read as it.
  if (platform !== "linux") return null;
  try {
    const stat = await fs.readText(`/proc/${pid}/stat`);
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

/** This process as a lock owner. */
export async function selfOwner(fs: FsAdapter): Promise<LockOwner> {
  return { pid: process.pid, start: await processStart(fs, process.pid), host: hostname() };
}

/** True while `owner` runs: same host (another host's lock is never judged), pid alive, same start time. */
export async function ownerAlive(fs: FsAdapter, owner: LockOwner): Promise<boolean> {
  if (owner.host !== hostname()) return true;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as { code?: string }).code === "ESRCH") return false;
  }
  if (owner.start === null) return true;
  const start = await processStart(fs, owner.pid);
  return start === null || start === owner.start;
}

// Temporary files a killed process leaves (a `.staging` publish, a repair, a restore's temporary file) carry their writer, so the next
// start can prove one stale and remove it; names made before writers were named are stale once a day old.
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
