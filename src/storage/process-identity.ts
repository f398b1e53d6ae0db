// A process as a lock owner (docs/RELIABILITY.md "One live writer per conversation"): pid plus the kernel's start time, so a recycled pid
// is not taken for the owner (Linux /proc; elsewhere the pid alone).
import { hostname } from "node:os";
import process from "node:process";
import type { FsAdapter } from "./fs-adapter.ts";
import type { LockOwner } from "./dir-lock.ts";
import { createHash } from "node:crypto";
import { join } from "node:path/posix";
import { currentUid } from "./trusted-path.ts";

/** Field 22 of /proc/<pid>/stat, or null off Linux (another system's /proc, or a file planted there, is not read as it). */
export async function processStart(fs: FsAdapter, pid: number, platform: string = process.platform): Promise<string | null> {
  if (platform !== "linux") return null;
  try {
    const stat = await fs.readText(`/proc/${pid}/stat`);
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

export async function selfOwner(fs: FsAdapter): Promise<LockOwner> {
  return { pid: process.pid, start: await processStart(fs, process.pid), host: hostname() };
}

/** Same host (another host's lock is never judged), pid alive, same start time. */
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

// Temporary files a killed process leaves (a `.staging` publish, a restore's temporary file) carry their writer, so the next start can
// prove one stale; names made before writers were named are stale once a day old (no publish or restore takes that long).
const UNNAMED_STALE_MS = 24 * 60 * 60 * 1000;

const hostTag = () => createHash("sha256").update(hostname()).digest("hex").slice(0, 8);

/** `w<pid>-<start>-<host>`: characters every filesystem takes. */
export async function writerTag(fs: FsAdapter): Promise<string> {
  return `w${process.pid}-${(await processStart(fs, process.pid)) ?? "x"}-${hostTag()}`;
}

export function writerOf(name: string): { pid: number; start: string | null; host: string } | null {
  const m = /(?:^|[.-])w(\d+)-(\d+|x)-([0-9a-f]{8})(?=[.-]|$)/.exec(name);
  return m === null ? null : { pid: Number(m[1]), start: m[2] === "x" ? null : m[2], host: m[3] };
}

/** Removes the provably stale leftovers `isLeftover` names; returns their names. Never throws: one that cannot be removed stays. */
export async function removeLeftovers(fs: FsAdapter, dir: string, isLeftover: (name: string) => boolean, now: number): Promise<string[]> {
  const removed: string[] = [];
  const uid = currentUid();
  for (const entry of await fs.readdir(dir).catch(() => [])) {
    if (!entry.isFile || !isLeftover(entry.name)) continue;
    const path = join(dir, entry.name);
    try {
      const info = await fs.lstat(path);
      if (info === null || !info.isFile || (uid >= 0 && info.uid !== uid)) continue;
      const writer = writerOf(entry.name);
      const stale = writer === null
        ? now - info.mtimeMs >= UNNAMED_STALE_MS
        : writer.host === hostTag() && !(await ownerAlive(fs, { pid: writer.pid, start: writer.start, host: hostname() }));
      if (!stale) continue;
      await fs.unlink(path);
      removed.push(entry.name);
    } catch {
      // gone meanwhile, or not ours to remove: it stays
    }
  }
  return removed;
}
