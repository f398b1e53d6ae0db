/** doctor's look through the mirror tree for what the tap would refuse to write into. */
import { describe } from "../utils/describe-error.ts";
import { untrusted } from "../storage/trusted-path.ts";
import type { CommandIo } from "./command-io.ts";
import { join } from "../storage/paths.ts";

/**
 * What the tap would refuse in the first two levels of the tree (session directories and their files, its
 * own `.locks`, `.staging`, `.spool` and events log): another user's, open to others, or a link. Each is
 * refused at write time with an events-log line; here, with what to do about it.
 */
export async function plantedEntries(io: CommandIo, root: string): Promise<{ check: string; status: "warn" | "fail"; detail: string }[]> {
  const found: string[] = [];
  const look = async (path: string, depth: number): Promise<void> => {
    for (const entry of await io.fs.readdir(path)) {
      if (found.length >= 5) return;
      const child = join(path, entry.name);
      const info = await io.fs.lstat(child);
      if (info === null) continue;
      const why = info.isSymbolicLink ? "is a symbolic link" : untrusted(info, info.isDirectory ? "directory" : "file");
      if (why !== null) found.push(`${child} ${why}`);
      else if (info.isDirectory && depth < 1) await look(child, depth + 1);
    }
  };
  try {
    await look(root, 0);
  } catch (error) {
    return [{ check: "mirror tree", status: "warn", detail: `could not look through ${root} (${describe(error)})` }];
  }
  if (found.length === 0) return [];
  return [{
    check: "mirror tree",
    status: "fail",
    detail: `the tap refuses to write into ${found.join("; ")}${
      found.length >= 5 ? "; …" : ""
    }: the mirror did not put them there — look at them, then remove them (or chmod go-w what is yours)`,
  }];
}
