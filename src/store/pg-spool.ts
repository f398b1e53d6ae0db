/**
 * The store's queue on disk (docs/DESIGN.md "The shared store"): every commit is appended here, fsynced, before it is
 * written to PostgreSQL, and read back in order, so an outage, a crash or an engine restart loses none of it.
 */
import { type FsAdapter, isNotFound } from "../storage/fs-adapter.ts";
import type { LockOwner } from "../storage/dir-lock.ts";
import { ensureTrustedDir } from "../storage/trusted-path.ts";
import { SpoolFiles } from "../storage/spool.ts";
import type { CommitJob } from "../protocol/commit-job.ts";
import { join } from "node:path/posix";
import { jsonObject } from "../protocol/json.ts";

/** What the spool reports (for the events log). */
export interface SpoolEvents {
  malformed(file: string, line: number): void;
  adopted(file: string, jobs: number): void;
  refused(error: Error): void;
}

/** Most bytes read from a spool file at once (more when one line is longer). */
const READ_BYTES = 4 * 1024 * 1024;

/** The queue of one process: its own file, after the files of dead processes it adopted. */
export class PgSpool {
  /** Jobs appended (or adopted) and not yet taken off. */
  pending = 0;
  /** Appends and the removal of a file read to its end, one at a time (no job lands in a file being removed). */
  private tail: Promise<unknown> = Promise.resolve();
  private readonly files: SpoolFiles;
  private ensured = false;
  /** Lines waiting for the next write, which takes all of them: one append and one fsync however many arrived meanwhile. */
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
    readonly dir: string,
    self: Promise<LockOwner>,
    private readonly events: SpoolEvents,
    private readonly root: string,
  ) {
    this.files = new SpoolFiles(fs, dir, self);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.then(() => undefined, () => undefined);
    return run;
  }

  /** Appends one job, fsynced; rejects when the local disk refuses it. */
  append(job: CommitJob): Promise<void> {
    return new Promise((done, failed) => {
      if (this.waiting.push({ line: JSON.stringify(job) + "\n", done, failed }) === 1) void this.serial(() => this.write());
    });
  }

  private async write(): Promise<void> {
    const batch = this.waiting.splice(0);
    const text = batch.map((w) => w.line).join("");
    try {
      if (!this.ensured) await ensureTrustedDir(this.fs, this.root, this.dir);
      this.ensured = true;
      await this.fs.append(join(this.dir, await this.files.ownName()), text, true);
    } catch (error) {
      this.ensured = false; // the directory may have gone: made (and checked) again next time
      for (const w of batch) w.failed(error);
      return;
    }
    this.synced += new TextEncoder().encode(text).length;
    this.pending += batch.length;
    for (const w of batch) w.done();
  }

  /** Keeps a job the store refused for good beside the queue, in `failed-….jsonl` (never removed). */
  async setAside(job: CommitJob): Promise<void> {
    await this.fs.append(join(this.dir, `failed-${(await this.files.stem()).slice("spool-".length)}.jsonl`), JSON.stringify(job) + "\n", true);
  }

  /** The oldest jobs not yet taken off, in order, at most `max` and all of one conversation (`key`); [] when none waits. */
  async next(max: number, key: (job: CommitJob) => string): Promise<CommitJob[]> {
    for (let files = 0; this.ahead.length === 0; files++) {
      if (files > 10_000 || !(await this.readAhead())) return [];
    }
    const first = key(this.ahead[0].job);
    const run = this.ahead.slice(0, max);
    return run.slice(0, (run.findIndex((a) => key(a.job) !== first) + 1 || run.length + 1) - 1).map((a) => a.job);
  }

  /** The first `n` jobs `next()` gave are written: takes them off (their file goes once `next()` finds nothing more in it). */
  shift(n: number): void {
    this.offset = this.ahead.splice(0, n).at(-1)?.end ?? this.offset;
    this.pending = Math.max(0, this.pending - n);
  }

  /** Reads the next jobs of the oldest file; false when no file holds any. */
  private async readAhead(): Promise<boolean> {
    if (!this.adopted) await this.adoptOrphans();
    this.adopted = true;
    const own = await this.files.ownName();
    this.file ??= (await this.files.adoptedNames())[0] ?? own;
    const path = join(this.dir, this.file);
    const bytes = await this.read(path, this.file === own ? this.synced : Number.POSITIVE_INFINITY);
    const text = new TextDecoder().decode(bytes.subarray(0, bytes.lastIndexOf(0x0a) + 1));
    let end = this.offset;
    for (const line of text.split("\n").slice(0, -1)) {
      end += new TextEncoder().encode(line).length + 1;
      const job = jsonObject(line) as CommitJob | null;
      if (job !== null) this.ahead.push({ job, end });
      else {
        this.events.malformed(this.file, end);
        this.offset = end;
      }
    }
    return this.ahead.length > 0 || (await this.serial(() => this.finish(path, this.file === own)));
  }

  /** The bytes of `path` from the offset to `limit`, READ_BYTES at a time but at least one whole line ([] when it is not there). */
  private async read(path: string, limit: number): Promise<Uint8Array> {
    try {
      let bytes = await this.fs.readRange(path, this.offset, Math.min(limit, this.offset + READ_BYTES));
      while (!bytes.includes(0x0a) && bytes.length > 0 && bytes.length % READ_BYTES === 0) {
        bytes = await this.fs.readRange(path, this.offset, Math.min(limit, this.offset + bytes.length * 2));
      }
      return bytes;
    } catch (error) {
      if (isNotFound(error)) return new Uint8Array();
      throw error;
    }
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

  /** Adopts the files of dead processes, counting their jobs as pending. */
  private async adoptOrphans(): Promise<void> {
    if ((await this.fs.lstat(this.dir)) === null) return;
    await ensureTrustedDir(this.fs, this.root, this.dir);
    for (const { from, name } of await this.files.adoptOrphans()) {
      const text = await this.fs.readText(join(this.dir, name));
      const jobs = text.split("\n").slice(0, -1).filter((line) => jsonObject(line) !== null).length;
      this.pending += jobs;
      this.events.adopted(from, jobs);
    }
    for (const error of this.files.refused) this.events.refused(error);
  }
}
