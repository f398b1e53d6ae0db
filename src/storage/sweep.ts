// Retention sweep (docs/DESIGN.md "The mirror"): removes mirror files older than the cutoff, then prunes the directories that emptied
// (never a young empty one: a writer just made it).
import { type EntryInfo, type FsAdapter, sameFile, unless } from "./fs-adapter.ts";
import { join } from "node:path/posix";

export interface SweepResult {
  removedFiles: number;
  prunedDirs: number;
  touchedDirs: string[];
  /** Entries left alone because they changed identity under the sweep. */
  skipped: number;
}

const MAX_DEPTH = 8;

export async function sweepTree(fs: FsAdapter, root: string, cutoffMs: number): Promise<SweepResult> {
  const result: SweepResult = { removedFiles: 0, prunedDirs: 0, touchedDirs: [], skipped: 0 };
  const rootInfo = await fs.lstat(root);
  if (rootInfo === null || !rootInfo.isDirectory || rootInfo.isSymbolicLink) return result;
  await sweepDir(fs, root, rootInfo, cutoffMs, 0, result);
  return result;
}

async function sweepDir(fs: FsAdapter, dir: string, self: EntryInfo, cutoffMs: number, depth: number, result: SweepResult): Promise<boolean> {
  const entries = await fs.readdir(dir);
  // The listing is only ours if `dir` is still the directory we decided to enter.
  if (!sameFile(self, await fs.lstat(dir))) {
    result.skipped++;
    return false;
  }
  let remaining = entries.length;
  let removedHere = false;
  let prunedHere = false;
  for (const entry of entries) {
    const path = join(dir, entry.name);
    const info = await fs.lstat(path);
    if (info === null) {
      remaining--;
      continue;
    }
    if (info.isSymbolicLink) continue; // never followed, never removed
    if (depth === 0 && entry.name.startsWith(".")) continue; // the tap's own .locks and .staging
    if (info.isDirectory && depth < MAX_DEPTH) {
      if (!(await sweepDir(fs, path, info, cutoffMs, depth + 1, result)) || !(await unchanged(fs, [[dir, self], [path, info]], result))) continue;
      // Refused when a writer put something in it (or removed it) meanwhile.
      if (!(await unless(fs.rmdir(path).then(() => true), ["ENOTEMPTY", "EEXIST", "ENOENT"], false))) continue;
      result.prunedDirs++;
      prunedHere = true;
      remaining--;
    } else if (info.isFile && entry.name.endsWith(".jsonl") && info.mtimeMs < cutoffMs) {
      if (!(await unchanged(fs, [[dir, self], [path, info]], result))) continue;
      await fs.unlink(path);
      result.removedFiles++;
      removedHere = true;
      remaining--;
    }
  }
  if (removedHere) result.touchedDirs.push(dir);
  // Pruned only when this sweep emptied it or it has been empty since before the cutoff: a young empty one is a writer's.
  return depth > 0 && remaining === 0 && (removedHere || prunedHere || self.mtimeMs < cutoffMs);
}

/** Counts a skip when some (path, identity) pair no longer holds. */
async function unchanged(fs: FsAdapter, pairs: [string, EntryInfo][], result: SweepResult): Promise<boolean> {
  for (const [path, info] of pairs) {
    if (!sameFile(info, await fs.lstat(path))) {
      result.skipped++;
      return false;
    }
  }
  return true;
}
