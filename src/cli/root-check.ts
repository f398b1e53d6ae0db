/**
 * The mirror root at start (docs/DESIGN.md "Health and exit"): `serve` creates it (0700, with its
 * parents) and proves it can write there before it listens, so a tap that could mirror nothing never
 * starts looking healthy. Returns null when the root is usable, else what is wrong, in words that name
 * the path.
 */
import { describe } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { DIR_MODE, join } from "../storage/mirror-tree.ts";

/** Creates the root when absent and checks it is a real, writable directory; null when usable, else the problem. */
export async function prepareRoot(fs: FsAdapter, root: string): Promise<string | null> {
  let info;
  try {
    info = await fs.lstat(root);
    if (info === null) {
      await fs.mkdir(root, DIR_MODE);
      info = await fs.lstat(root);
    }
  } catch (error) {
    return `it cannot be created (${describe(error)})`;
  }
  if (info === null) return "it vanished while being created";
  if (info.isSymbolicLink) return `${root} is a symbolic link; point the setting at the real directory`;
  if (!info.isDirectory) return `${root} exists and is not a directory`;
  if (!(await fs.canReadWrite(root))) return `${root} is not readable and writable by this user`;
  const probe = join(root, `.sessiontap-probe-${crypto.randomUUID().slice(0, 8)}`);
  try {
    await fs.createExclusive(probe, "", false);
    await fs.unlink(probe);
  } catch (error) {
    return `nothing can be written there (${describe(error)})`;
  }
  return null;
}
