// Spools (docs/RELIABILITY.md "Trust boundaries"): commits kept on disk until written where they belong, one file per process
// (`spool-<host>-<pid>-<start>.jsonl`), a dead process's file adopted by rename. The store queues every commit here; the mirror what it could not write.
import type { CommitJob } from "../protocol/commit-job.ts";
import { type LockOwner, ownerAlive } from "./dir-lock.ts";
import { completeLines, jsonObject } from "../protocol/json.ts";
import { createHash } from "node:crypto";
import { currentUid, ensurePrivateDir, ensureTrustedDir, UnsafePathError, untrusted } from "./trusted-path.ts";
import { join } from "node:path/posix";
import { hostname, tmpdir } from "node:os";
import { type FsAdapter, removeIfThere, unless } from "./fs-adapter.ts";

const safe = (s: string) => s.replace(/[^A-Za-z0-9.]/g, "_");
const SPOOL_NAME = /^spool-(.+)-(\d+)-([^-]+?)(?:-a\d+)?\.jsonl$/;
const READ_BYTES = 4 * 1024 * 1024;
const encoder = new TextEncoder();

/** The jobs on the whole lines of `text` (read from byte `at` of its file), each with where its line ends; and where each malformed line ends. */
function jobsOf(text: string, at = 0): { jobs: { job: CommitJob; end: number }[]; malformed: number[] } {
  const out = { jobs: [] as { job: CommitJob; end: number }[], malformed: [] as number[] };
  for (const line of completeLines(text)) {
    at += encoder.encode(line).length + 1;
    const job = jsonObject(line) as CommitJob | null;
    if (job === null) out.malformed.push(at);
    else out.jobs.push({ job, end: at });
  }
  return out;
}

/** One place a spool can live; `ensure` creates the directory (0700) or checks the one there, and throws when it cannot be used. */
export interface SpoolPlace {
  dir: string;
  ensure(): Promise<void>;
}

export interface SpoolEvents {
  malformed(file: string, line: number): void;
  adopted(file: string, jobs: number): void;
  refused(error: Error): void;
}

export function trustedPlace(fs: FsAdapter, root: string, dir: string): SpoolPlace {
  return { dir, ensure: () => ensureTrustedDir(fs, root, dir) };
}

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

export function rootSpoolDir(root: string): string {
  return join(root, ".spool", "mirror");
}

/** One spool directory as one process sees it: its own file after the files of dead processes it adopted, read in order by `next`. */
export class Spool {
  pending = 0;
  readonly dir: string;
  private adoptions = 0;
  /** Appends and the removal of a file read to its end, one at a time (no job lands in a file being removed). */
  private tail: Promise<unknown> = Promise.resolve();
  private ensured = false;
  /** Lines for the next write, which takes all of them: one append and one fsync however many arrived meanwhile. */
  private waiting: { line: string; done: () => void; failed: (error: unknown) => void }[] = [];
  /** Bytes of the own file fsynced: what is read of it never goes past them. */
  private synced = 0;
  /** The file being read (null: look again), how far it is taken off, and its jobs read ahead with where each ends. */
  private file: string | null = null;
  private offset = 0;
  private ahead: { job: CommitJob; end: number }[] = [];
  private adopted = false;

  constructor(
    private readonly fs: FsAdapter,
    private readonly place: SpoolPlace,
    private readonly self: Promise<LockOwner> | LockOwner,
    private readonly events: SpoolEvents,
  ) {
    this.dir = place.dir;
  }

  async stem(): Promise<string> {
    const me = await this.self;
    return `spool-${safe(me.host)}-${me.pid}-${me.start ?? "x"}`;
  }

  private isAdopted(name: string, stem: string): boolean {
    return name.startsWith(`${stem}-a`) && /^\d+\.jsonl$/.test(name.slice(stem.length + 2));
  }

  async adoptedNames(): Promise<string[]> {
    const stem = await this.stem();
    const names = (await this.fs.readdir(this.dir)).filter((e) => e.isFile).map((e) => e.name);
    return names.filter((n) => this.isAdopted(n, stem)).sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  }

  /** Renames the files of dead processes on this host to this process's name (when the directory exists), counting their jobs as pending. */
  async adopt(): Promise<void> {
    if ((await this.fs.lstat(this.dir)) === null) return;
    await this.place.ensure(); // never read a planted directory
    const stem = await this.stem();
    const host = safe(hostname());
    for (const entry of await this.fs.readdir(this.dir)) {
      const m = SPOOL_NAME.exec(entry.name);
      if (!entry.isFile || entry.isSymbolicLink || m === null || entry.name === `${stem}.jsonl` || this.isAdopted(entry.name, stem) || m[1] !== host) continue;
      if (await ownerAlive(this.fs, { pid: Number(m[2]), start: m[3] === "x" ? null : m[3], host: hostname() })) continue;
      // A planted spool would be replayed into the mirror as if the user had said it.
      const path = join(this.dir, entry.name);
      const info = await this.fs.lstat(path);
      const why = info === null ? null : untrusted(info, "file");
      if (why !== null) {
        this.events.refused(new UnsafePathError(`${path} ${why}; not replayed`));
        continue;
      }
      const target = join(this.dir, `${stem}-a${++this.adoptions}.jsonl`);
      if (!(await this.fs.rename(path, target).then(() => true, () => false))) continue; // another process adopted it first
      const jobs = jobsOf(await this.fs.readText(target)).jobs.length;
      this.pending += jobs;
      this.events.adopted(entry.name, jobs);
    }
  }

  append(job: CommitJob): Promise<void> {
    return new Promise((done, failed) => {
      if (this.waiting.push({ line: JSON.stringify(job) + "\n", done, failed }) === 1) void this.serial(() => this.write());
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.then(() => undefined, () => undefined);
    return run;
  }

  private async write(): Promise<void> {
    const batch = this.waiting.splice(0);
    const text = batch.map((w) => w.line).join("");
    try {
      if (!this.ensured) await this.place.ensure();
      this.ensured = true;
      await this.fs.append(join(this.dir, `${await this.stem()}.jsonl`), text, true);
    } catch (error) {
      this.ensured = false; // the directory may have gone: made (and checked) again next time
      for (const w of batch) w.failed(error);
      return;
    }
    this.synced += encoder.encode(text).length;
    this.pending += batch.length;
    for (const w of batch) w.done();
  }

  /** Keeps a job refused for good beside the queue, in `failed-….jsonl` (never removed). */
  async setAside(job: CommitJob): Promise<void> {
    await this.fs.append(join(this.dir, `failed-${(await this.stem()).slice("spool-".length)}.jsonl`), JSON.stringify(job) + "\n", true);
  }

  /** The oldest jobs not yet taken off, in order, at most `max` and all of one conversation (`key`); [] when none waits. */
  async next(max: number, key: (job: CommitJob) => string): Promise<CommitJob[]> {
    for (let files = 0; this.ahead.length === 0; files++) {
      if (files > 10_000 || !(await this.readAhead())) return [];
    }
    const first = key(this.ahead[0].job);
    const end = this.ahead.findIndex((a, i) => i === max || key(a.job) !== first);
    return this.ahead.slice(0, end < 0 ? max : end).map((a) => a.job);
  }

  /** The first `n` jobs `next()` gave are written: takes them off (their file goes once `next()` finds nothing more in it). */
  shift(n: number): void {
    this.offset = this.ahead.splice(0, n).at(-1)?.end ?? this.offset;
    this.pending = Math.max(0, this.pending - n);
  }

  private async readAhead(): Promise<boolean> {
    if (!this.adopted) await this.adopt();
    this.adopted = true;
    const own = `${await this.stem()}.jsonl`;
    this.file ??= (await this.adoptedNames())[0] ?? own;
    const path = join(this.dir, this.file);
    const { jobs, malformed } = jobsOf(
      new TextDecoder().decode(await this.read(path, this.file === own ? this.synced : Number.POSITIVE_INFINITY)),
      this.offset,
    );
    this.ahead = jobs; // next() reads ahead only when nothing is left
    for (const end of malformed) this.events.malformed(this.file, this.offset = end);
    return this.ahead.length > 0 || (await this.serial(() => this.finish(path, this.file === own)));
  }

  /** The bytes of `path` from the offset to `limit`, READ_BYTES at a time but at least one whole line ([] when it is not there). */
  private async read(path: string, limit: number): Promise<Uint8Array> {
    const range = (end: number) => unless(this.fs.readRange(path, this.offset, Math.min(limit, end)), "ENOENT", new Uint8Array());
    let bytes = await range(this.offset + READ_BYTES);
    while (!bytes.includes(0x0a) && bytes.length > 0 && bytes.length % READ_BYTES === 0) bytes = await range(this.offset + bytes.length * 2);
    return bytes;
  }

  /** Removes a file read to its end (the own file only when nothing was appended since); true when another may hold jobs. */
  private async finish(path: string, own: boolean): Promise<boolean> {
    if (own && (this.synced > this.offset || this.waiting.length > 0)) return true;
    const info = await this.fs.lstat(path);
    if (!own && info !== null && info.size > this.offset) this.events.malformed(this.file!, info.size); // a dead process's torn last line
    if (info !== null) await this.fs.unlink(path);
    this.file = null;
    this.offset = 0;
    if (own) this.synced = 0;
    return !own;
  }
}

export class MirrorSpool {
  constructor(
    private readonly fs: FsAdapter,
    private readonly places: SpoolPlace[],
    private readonly self: Promise<LockOwner> | LockOwner,
  ) {}

  private spool(place: SpoolPlace, refused: (error: Error) => void = () => {}): Spool {
    return new Spool(this.fs, place, this.self, { malformed: () => {}, adopted: () => {}, refused });
  }

  /** Saves `jobs` in the first place that takes them all; resolves with that file, or rejects with every place's failure. */
  async save(jobs: CommitJob[]): Promise<string> {
    const failures: string[] = [];
    for (const place of this.places) {
      const spool = this.spool(place);
      try {
        await Promise.all(jobs.map((job) => spool.append(job))); // one batch: one write, one fsync
        return join(place.dir, `${await spool.stem()}.jsonl`);
      } catch (error) {
        failures.push(`${place.dir}: ${(error as { code?: string }).code ?? ""} ${(error as Error).message}`.trim());
      }
    }
    throw Object.assign(new Error(`nowhere to save ${jobs.length} commits (${failures.join("; ")})`), { code: "ENOSPOOL" });
  }

  /** Adopts what dead processes left in every place, and reads their commits, oldest request first; `files` go once every job is written. */
  async load() {
    const out = { jobs: [] as CommitJob[], files: [] as string[], malformed: 0, unreadable: [] as { dir: string; error: unknown }[] };
    for (const place of this.places) {
      try {
        const spool = this.spool(place, (error) => out.unreadable.push({ dir: place.dir, error }));
        await spool.adopt();
        for (const name of await spool.adoptedNames()) {
          const path = join(place.dir, name);
          const { jobs, malformed } = jobsOf(await this.fs.readText(path));
          out.files.push(path);
          out.jobs = out.jobs.concat(jobs.map((j) => j.job));
          out.malformed += malformed.length;
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

  async remove(files: string[]): Promise<void> {
    for (const path of files) await removeIfThere(this.fs, path);
  }
}
