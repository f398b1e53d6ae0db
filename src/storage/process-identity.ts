/**
 * A process's identity for lock ownership: pid plus the kernel's start time, so a recycled pid is not
 * mistaken for the owner (Linux /proc; elsewhere the pid alone is checked, so on macOS and Windows a lock
 * whose dead owner's pid now belongs to another process counts as held while that process runs: its
 * writes wait and are retried, never lost).
 */
import { hostname } from "node:os";
import process from "node:process";
import type { FsAdapter } from "./fs-adapter.ts";
import type { LockOwner } from "./dir-lock.ts";

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
