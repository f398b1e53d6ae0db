/**
 * A directory only this user can use, outside the mirror root (a spool under the system's temporary
 * directory, which other users can write to): created 0700 when absent, and refused when it is a
 * symbolic link, not a directory, owned by someone else, or open to group or others, so nobody can plant
 * it in advance to read or redirect what is saved there (docs/DESIGN.md "Trust boundaries").
 */
import type { FsAdapter } from "./fs-adapter.ts";
import { DIR_MODE } from "./paths.ts";
import { currentUid, untrusted } from "./trusted-path.ts";

/** Creates `path` (one level: its parent must exist) or checks the one there; throws with the reason it cannot be used. */
export async function ensurePrivateDir(fs: FsAdapter, path: string): Promise<void> {
  let info = await fs.lstat(path);
  if (info === null) {
    try {
      await fs.mkdir(path, DIR_MODE);
    } catch (error) {
      if ((error as { code?: string }).code !== "EEXIST") throw error;
    }
    info = await fs.lstat(path);
  }
  const refuse = (why: string) => Object.assign(new Error(`${path} ${why}; not used`), { code: "EUNSAFE" });
  if (info === null) throw refuse("vanished while being created");
  const why = untrusted(info, "directory");
  if (why !== null) throw refuse(why);
  // Stricter than the mirror tree: this directory sits where others can look, so it must not be readable either.
  if (currentUid() >= 0 && (info.mode & 0o077) !== 0) throw refuse(`is open to other users (mode ${(info.mode & 0o777).toString(8)})`);
}
