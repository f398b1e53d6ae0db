/** Root validation at start (SPEC §4, issue 5): an existing root must be a directory we can use. */
import type { FsAdapter } from "../storage/fs-adapter.ts";

/** Null when the root is usable (or absent: created 0700 on first write), else what is wrong with it. */
export async function checkRoot(fs: FsAdapter, root: string): Promise<string | null> {
  const info = await fs.lstat(root);
  if (info === null) return null;
  if (info.isSymbolicLink) return `${root} is a symbolic link; point the setting at the real directory`;
  if (!info.isDirectory) return `${root} exists and is not a directory`;
  if (!(await fs.canReadWrite(root))) return `${root} is not readable and writable by this user`;
  return null;
}
