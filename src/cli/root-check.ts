/**
 * The mirror root at start (docs/DESIGN.md "Health and exit"): `serve` creates it (0700, with its
 * parents) and proves it can write there before it listens, so a tap that could mirror nothing never
 * starts looking healthy; and it must be this user's own and writable by nobody else, or a neighbour on
 * the machine could read every conversation or plant files the tap would write into. Returns null when the
 * root is usable, else what is wrong, in words that name the path and the fix.
 */
import { describe } from "../utils/describe-error.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { untrusted } from "../storage/trusted-path.ts";
import { DIR_MODE, join } from "../storage/paths.ts";

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
  const why = untrusted(info, "directory");
  if (why !== null && why.startsWith("belongs")) return `${root} ${why}; point the setting at a directory of your own`;
  if (why !== null) return `${root} ${why}, so other users could read or plant conversations; chmod 700 ${root}`;
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
