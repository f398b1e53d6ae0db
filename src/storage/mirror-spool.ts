// Where the mirror keeps commits it could not write before the tap stopped, so they are written on the next start instead of being dropped in silence
// (docs/DESIGN.md "Health and exit"): first choice `<root>/.spool/mirror/`, and when the root itself is what fails, a private directory under the…
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import type { CommitJob } from "../protocol/commit-job.ts";
import type { LockOwner } from "./dir-lock.ts";
import { type FsAdapter, removeIfThere } from "./fs-adapter.ts";
import { SpoolFiles } from "./spool-files.ts";
import { join } from "node:path/posix";
import { currentUid, ensurePrivateDir } from "./trusted-path.ts";
import { completeLines, jsonObject } from "../protocol/json.ts";

/** One place a spool can live, and how to make sure it is safe to use. */
export interface SpoolPlace {
  dir: string;
  /** Creates the directory (0700) or checks the one there; throws when it cannot be used. */
  ensure(): Promise<void>;
}

/** The spool directory under the root. */
export function rootSpoolDir(root: string): string {
  return join(root, ".spool", "mirror");
}

/** The fallback place under the system's temporary directory, one per user and mirror root. */
export function tempSpoolPlace(fs: FsAdapter, root: string, tmp = tmpdir()): SpoolPlace {
  const uid = currentUid();
  const userDir = join(tmp, `sessiontap-${uid >= 0 ? uid : "user"}`);
  const dir = join(userDir, `spool-${createHash("sha256").update(root).digest("hex").slice(0, 16)}`);
  return {
    dir,
    async ensure() {
      await ensurePrivateDir(fs, userDir);
      await ensurePrivateDir(fs, dir);
    },
  };
}

/** What a start found to replay. */
export interface SpoolLoad {
  jobs: CommitJob[];
  /** The adopted files (full paths): remove them once every job is written. */
  files: string[];
  /** Lines that were not commits (a torn tail): skipped. */
  malformed: number;
  /** Places that could not be looked at, and why (what they hold waits for a later start). */
  unreadable: { dir: string; error: unknown }[];
}

/** The mirror's shutdown spool over its places, in order of preference. */
export class MirrorSpool {
  constructor(
    private readonly fs: FsAdapter,
    private readonly places: SpoolPlace[],
    private readonly self: Promise<LockOwner> | LockOwner,
  ) {}

  /** Saves `jobs` in the first place that takes them all; resolves with that file, or rejects with every place's failure. */
  async save(jobs: CommitJob[]): Promise<string> {
    const text = jobs.map((job) => JSON.stringify(job) + "\n").join("");
    const failures: string[] = [];
    for (const place of this.places) {
      try {
        await place.ensure();
        const path = join(place.dir, await new SpoolFiles(this.fs, place.dir, this.self).ownName());
        await this.fs.append(path, text, true);
        return path;
      } catch (error) {
        failures.push(`${place.dir}: ${(error as { code?: string }).code ?? ""} ${(error as Error).message}`.trim());
      }
    }
    throw Object.assign(new Error(`nowhere to save ${jobs.length} commits (${failures.join("; ")})`), { code: "ENOSPOOL" });
  }

  /** Adopts the spool files dead processes left in every place that exists, and reads their commits, oldest request first. */
  async load(): Promise<SpoolLoad> {
    const out: SpoolLoad = { jobs: [], files: [], malformed: 0, unreadable: [] };
    for (const place of this.places) {
      try {
        if ((await this.fs.lstat(place.dir)) === null) continue;
        await place.ensure(); // never read a planted directory
        const files = new SpoolFiles(this.fs, place.dir, this.self);
        await files.adoptOrphans();
        for (const error of files.refused) out.unreadable.push({ dir: place.dir, error });
        for (const name of await files.adoptedNames()) {
          const path = join(place.dir, name);
          const text = await this.fs.readText(path);
          out.files.push(path);
          for (const line of completeLines(text)) {
            const job = jsonObject(line) as CommitJob | null;
            if (job === null) out.malformed++;
            else out.jobs.push(job);
          }
        }
      } catch (error) {
        if ((error as { code?: string }).code === "ENOTDIR") continue; // a path that cannot hold a spool holds none
        out.unreadable.push({ dir: place.dir, error });
      }
    }
    // Stable: commits of one conversation keep their order; files of two dead taps interleave by time.
    out.jobs.sort((a, b) => a.requestTimestamp.localeCompare(b.requestTimestamp));
    return out;
  }

  /** Removes replayed files (already gone is fine). */
  async remove(files: string[]): Promise<void> {
    for (const path of files) await removeIfThere(this.fs, path);
  }
}
