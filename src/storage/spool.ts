// Spools (docs/RELIABILITY.md "Trust boundaries"): commits kept on disk until they can be written where they belong, one file per process
// (`spool-<host>-<pid>-<start>.jsonl`), a dead process's file adopted by rename; the mirror's shutdown spool and the store's queue share them.
import type { CommitJob } from "../protocol/commit-job.ts";
import type { LockOwner } from "./dir-lock.ts";
import { completeLines, jsonObject } from "../protocol/json.ts";
import { createHash } from "node:crypto";
import { currentUid, ensurePrivateDir, UnsafePathError, untrusted } from "./trusted-path.ts";
import { join } from "node:path/posix";
import { ownerAlive } from "./process-identity.ts";
import { hostname, tmpdir } from "node:os";
import { type FsAdapter, removeIfThere } from "./fs-adapter.ts";

/** Characters allowed in a spool file's host part. */
const safe = (s: string) => s.replace(/[^A-Za-z0-9.]/g, "_");
const SPOOL_NAME = /^spool-(.+)-(\d+)-([^-]+?)(?:-a\d+)?\.jsonl$/;

/** One spool directory, as seen by one process. */
export class SpoolFiles {
  private adoptedCount = 0;
  /** Files left alone because they are not ours to replay (another user's, or open to others). */
  readonly refused: UnsafePathError[] = [];

  constructor(
    private readonly fs: FsAdapter,
    readonly dir: string,
    private readonly self: Promise<LockOwner> | LockOwner,
  ) {}

  /** This process's file name stem. */
  async stem(): Promise<string> {
    const me = await this.self;
    return `spool-${safe(me.host)}-${me.pid}-${me.start ?? "x"}`;
  }

  /** This process's own file name. */
  async ownName(): Promise<string> {
    return `${await this.stem()}.jsonl`;
  }

  /** True for a file this process adopted (`<stem>-a<n>.jsonl`). */
  isAdopted(name: string, stem: string): boolean {
    return name.startsWith(`${stem}-a`) && /^\d+\.jsonl$/.test(name.slice(stem.length + 2));
  }

  /** The files this process adopted, in adoption order. */
  async adoptedNames(): Promise<string[]> {
    const stem = await this.stem();
    const names = (await this.fs.readdir(this.dir)).filter((e) => e.isFile).map((e) => e.name);
    return names.filter((n) => this.isAdopted(n, stem)).sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  }

  /** Renames the spool files of dead processes on this host to this process's name; returns what was renamed to what. */
  async adoptOrphans(): Promise<{ from: string; name: string }[]> {
    const stem = await this.stem();
    const host = safe(hostname());
    const adopted: { from: string; name: string }[] = [];
    for (const entry of await this.fs.readdir(this.dir)) {
      const m = SPOOL_NAME.exec(entry.name);
      if (!entry.isFile || entry.isSymbolicLink || m === null || entry.name === `${stem}.jsonl` || this.isAdopted(entry.name, stem) || m[1] !== host) continue;
      if (await ownerAlive(this.fs, { pid: Number(m[2]), start: m[3] === "x" ? null : m[3], host: hostname() })) continue;
      // A planted spool would be replayed into the mirror as if the user had said it.
      const info = await this.fs.lstat(join(this.dir, entry.name));
      const why = info === null ? null : untrusted(info, "file");
      if (why !== null) {
        this.refused.push(new UnsafePathError(`${join(this.dir, entry.name)} ${why}; not replayed`));
        continue;
      }
      const target = `${stem}-a${++this.adoptedCount}.jsonl`;
      try {
        await this.fs.rename(join(this.dir, entry.name), join(this.dir, target));
      } catch {
        continue; // another process adopted it first
      }
      adopted.push({ from: entry.name, name: target });
    }
    return adopted;
  }
}

// Where the mirror keeps commits it could not write before the tap stopped, so they are written on the next start instead of being dropped in silence
// (docs/DESIGN.md "Health and exit"): first choice `<root>/.spool/mirror/`, and when the root itself is what fails, a private directory under the…
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
