/**
 * Retention sweep (SPEC §4 "Disk discipline"): removes mirror files whose mtime is older than the
 * cutoff, then prunes empty directories. Never follows a symlink, never leaves the root, and re-checks an
 * entry's identity (device + inode) right before removing it.
 */
import type { EntryInfo, FsAdapter } from "./fs-adapter.ts";
import { join } from "./mirror-tree.ts";

/** What a sweep did. */
export interface SweepResult {
  removedFiles: number;
  prunedDirs: number;
  /** Directories (absolute) in which files were removed, so their writers can look again. */
  touchedDirs: string[];
}

const MAX_DEPTH = 8;

/** Same file as before: same device and inode, still a regular file or directory as expected. */
function sameEntry(a: EntryInfo, b: EntryInfo | null): boolean {
  return b !== null && !b.isSymbolicLink && a.dev === b.dev && a.ino === b.ino && a.isFile === b.isFile;
}

/** Sweeps the tree under `root`; files with mtime before `cutoffMs` go. */
export async function sweepTree(fs: FsAdapter, root: string, cutoffMs: number): Promise<SweepResult> {
  const result: SweepResult = { removedFiles: 0, prunedDirs: 0, touchedDirs: [] };
  const rootInfo = await fs.lstat(root);
  if (rootInfo === null || !rootInfo.isDirectory) return result;
  await sweepDir(fs, root, cutoffMs, 0, true, result);
  return result;
}

/** Sweeps one directory; returns true when it is empty afterwards. */
async function sweepDir(fs: FsAdapter, dir: string, cutoffMs: number, depth: number, isRoot: boolean, result: SweepResult): Promise<boolean> {
  const entries = await fs.readdir(dir);
  let remaining = entries.length;
  let removedHere = false;
  for (const entry of entries) {
    const path = join(dir, entry.name);
    const info = await fs.lstat(path);
    if (info === null) {
      remaining--;
      continue;
    }
    if (info.isSymbolicLink) continue; // never followed, never removed
    if (info.isDirectory && depth < MAX_DEPTH) {
      const empty = await sweepDir(fs, path, cutoffMs, depth + 1, false, result);
      if (empty && sameEntry(info, await fs.lstat(path)) && (await removeDir(fs, path))) {
        result.prunedDirs++;
        remaining--;
      }
    } else if (info.isFile && entry.name.endsWith(".jsonl") && info.mtimeMs < cutoffMs) {
      if (!sameEntry(info, await fs.lstat(path))) continue; // swapped since we looked: leave it
      await fs.unlink(path);
      result.removedFiles++;
      removedHere = true;
      remaining--;
    }
  }
  if (removedHere) result.touchedDirs.push(dir);
  return !isRoot && remaining === 0;
}

/** Removes an empty directory; false when a writer put something in it (or removed it) meanwhile. */
async function removeDir(fs: FsAdapter, path: string): Promise<boolean> {
  try {
    await fs.rmdir(path);
    return true;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOTEMPTY" || code === "EEXIST" || code === "ENOENT") return false;
    throw error;
  }
}
