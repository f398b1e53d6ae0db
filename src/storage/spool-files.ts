// The files of a spool directory (commits kept on disk until they can be written where they belong): each process appends to a file of its own,
// `spool-<host>-<pid>-<start>.jsonl`, so two taps sharing a root never interleave lines; a file whose process is dead is adopted — renamed to the adopter's…
import { hostname } from "node:os";
import type { LockOwner } from "./dir-lock.ts";
import type { FsAdapter } from "./fs-adapter.ts";
import { ownerAlive } from "./process-identity.ts";
import { UnsafePathError, untrusted } from "./trusted-path.ts";
import { join } from "node:path/posix";

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
