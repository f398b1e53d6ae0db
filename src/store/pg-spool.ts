/**
 * The store's outage spool (docs/DESIGN.md "The shared store"): while PostgreSQL cannot be reached, commits are appended to
 * `<mirror root>/.spool/postgres/` (one JSON CommitJob per line; directory 0700, files 0600, each append
 * fsynced) and replayed in order when it is back. Replaying re-plans each job against the store's
 * lineage, so a job replayed twice (a crash mid-replay) writes nothing twice.
 *
 * Each process appends to a file of its own (`spool-<host>-<pid>-<start>.jsonl`), so two taps sharing a
 * root never interleave or lose each other's lines; a file whose process is dead is adopted (renamed to
 * the adopter's name, atomically: one adopter wins) and replayed first. A job the store refuses for good
 * is set aside in `failed-….jsonl` (kept, never deleted).
 */
import type { FsAdapter } from "../storage/fs-adapter.ts";
import type { LockOwner } from "../storage/dir-lock.ts";
import { ensureTrustedDir } from "../storage/trusted-path.ts";
import { SpoolFiles } from "../storage/spool-files.ts";
import type { CommitJob } from "../protocol/commit-job.ts";
import { DIR_MODE, join } from "../storage/paths.ts";
import { completeLines, jsonObject } from "../protocol/json.ts";

/** What the spool reports while replaying (for the events log). */
export interface SpoolEvents {
  /** A line that is not a job (a torn tail left by a crash): skipped. */
  malformed(file: string, line: number): void;
  /** Another process's spool was adopted. */
  adopted(file: string, jobs: number): void;
  /** A spool file was left alone: not ours to replay (storage/trusted-path.ts). */
  refused?(error: Error): void;
}

/** The outage spool of one process. */
export class PgSpool {
  /** Jobs spooled and not replayed yet. */
  pending = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly files: SpoolFiles;
  /** Lines of each file already replayed (a replay cut short resumes after them). */
  private readonly progress = new Map<string, number>();

  constructor(
    private readonly fs: FsAdapter,
    readonly dir: string,
    self: Promise<LockOwner>,
    private readonly events: SpoolEvents,
    /** The mirror root `dir` lies under: every directory down to it must be ours (storage/trusted-path.ts). */
    private readonly root: string | null = null,
  ) {
    this.files = new SpoolFiles(fs, dir, self);
  }

  /** Creates the spool directory, refusing one that is a link or open to other users. */
  private async ensureDir(): Promise<void> {
    if (this.root === null) await this.fs.mkdir(this.dir, DIR_MODE);
    else await ensureTrustedDir(this.fs, this.root, this.dir);
  }

  /** This process's file name stem. */
  private stem(): Promise<string> {
    return this.files.stem();
  }

  /** Runs `fn` after every earlier append or check (appends and the final emptiness check never overlap). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.then(() => undefined, () => undefined);
    return run;
  }

  /**
   * Appends one job, fsynced, if `still()` holds at that moment (it is checked in order with the replay's
   * end, so no job lands in a spool that was just emptied); false when it did not. Rejects when the local
   * disk refuses the job too.
   */
  append(job: CommitJob, still: () => boolean = () => true): Promise<boolean> {
    return this.serial(async () => {
      if (!still()) return false;
      await this.ensureDir();
      await this.fs.append(join(this.dir, `${await this.stem()}.jsonl`), JSON.stringify(job) + "\n", true);
      this.pending++;
      return true;
    });
  }

  /** Keeps a job the store refused for good beside the spool. */
  async setAside(job: CommitJob): Promise<void> {
    await this.ensureDir();
    await this.fs.append(join(this.dir, `failed-${(await this.stem()).slice("spool-".length)}.jsonl`), JSON.stringify(job) + "\n", true);
  }

  /**
   * Replays every spooled job in order through `write` (which rejects to stop: the store went away again;
   * what is left stays spooled). Files of dead processes first, then this process's own, including lines
   * appended while replaying. `drained` runs once nothing is left, before any later append.
   */
  async replay(write: (job: CommitJob) => Promise<void>, drained: () => void): Promise<number> {
    let replayed = 0;
    await this.adoptOrphans();
    const stem = await this.stem();
    for (const name of [...(await this.files.adoptedNames()), `${stem}.jsonl`]) {
      const path = join(this.dir, name);
      for (let done = this.progress.get(name) ?? 0;;) {
        // Read between appends: a line is in the file before its fsync ends and it is counted in `pending`.
        const text = await this.serial(() => this.readComplete(path));
        const lines = text === null ? [] : completeLines(text);
        for (; done < lines.length; done++) {
          const job = jsonObject(lines[done]) as CommitJob | null;
          if (job === null) {
            this.events.malformed(name, done + 1);
            this.progress.set(name, done + 1);
            continue;
          }
          await write(job);
          replayed++;
          this.pending = Math.max(0, this.pending - 1);
          this.progress.set(name, done + 1);
        }
        // Nothing appended since the read: the file is done. (Appends wait for this check.)
        const finished = await this.serial(async () => {
          const info = await this.fs.lstat(path);
          if (info !== null && text !== null && info.size !== new TextEncoder().encode(text).byteLength) return false;
          if (text !== null && text !== "" && !text.endsWith("\n")) this.events.malformed(name, lines.length + 1); // a torn tail
          if (info !== null) await this.fs.unlink(path);
          this.progress.delete(name);
          if (name === `${stem}.jsonl`) drained();
          return true;
        });
        if (finished) break;
      }
    }
    return replayed;
  }

  /** A file's text, or null when it is not there. */
  private async readComplete(path: string): Promise<string | null> {
    const info = await this.fs.lstat(path);
    if (info === null || !info.isFile) return null;
    return await this.fs.readText(path);
  }

  /** Adopts the spool files of dead processes, counting their jobs as pending. */
  private async adoptOrphans(): Promise<void> {
    const before = this.files.refused.length;
    for (const { from, name } of await this.files.adoptOrphans()) {
      const jobs = completeLines((await this.readComplete(join(this.dir, name))) ?? "").length;
      this.pending += jobs;
      this.events.adopted(from, jobs);
    }
    for (const error of this.files.refused.slice(before)) this.events.refused?.(error);
  }
}
