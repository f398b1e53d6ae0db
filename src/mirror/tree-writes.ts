/**
 * The mirror tree's side of a commit (docs/DESIGN.md "Health and exit"): each conversation's commits are
 * written in order through the commit writer; one that fails waits in a bounded queue and is retried with
 * backoff, later commits of its conversation behind it; what still waits at shutdown is saved to a spool
 * that the next start replays before it serves. Never rejects: every outcome is reported.
 */
import type { CommitJob } from "../protocol/commit-job.ts";
import { placeOf } from "../protocol/conversation.ts";
import type { EventFields } from "../storage/events-log.ts";
import { describe } from "../utils/describe-error.ts";
import type { AppendResult, Cursor } from "../storage/mirror-tree.ts";
import type { MirrorSpool } from "../storage/mirror-spool.ts";
import type { CommitWriter } from "../writer/commit-writer.ts";
import { Backlog } from "./backlog.ts";

/** What the tree's writes report, and to whom. */
export interface TreeReports {
  log(action: string, fields?: EventFields): void;
  fail(stage: string, error: unknown, fields?: EventFields): void;
  /** One commit written: the job, its records, and what the append did. */
  written(job: CommitJob, records: number, result: AppendResult): void;
  dropped(key: string, count: number): void;
  /** A write failed; `queued` commits now wait (in all conversations). */
  writeFailed(key: string, error: unknown, queued: number): void;
  /** Nothing waits any more. */
  allWritten(): void;
  /** Keeps a promise until it settles (for the mirror's flush). */
  track(work: Promise<void>): Promise<void>;
}

/** What stopping did with commits that could not be written. */
export type Unwritten =
  | { kind: "none" }
  | { kind: "saved"; commits: number; path: string }
  | { kind: "lost"; commits: number; error: string };

/** What starting found in the spools of earlier runs. */
export interface Replayed {
  commits: number;
  files: string[];
  /** Commits of those that are still waiting (writes failed); their files are kept until they are written. */
  waiting: number;
}

/** The writes of one tree. */
export class TreeWrites {
  private readonly backlog: Backlog<CommitJob>;
  /** The drain running for each conversation (one at a time keeps its commits in order). */
  private readonly draining = new Map<string, Promise<void>>();
  /** Spool files replayed at start whose commits are not all written yet. */
  private spoolFiles: string[] = [];

  constructor(
    private readonly writer: CommitWriter<Cursor, AppendResult>,
    private readonly spool: MirrorSpool,
    maxQueued: number,
    private readonly reports: TreeReports,
    clock: () => number,
  ) {
    this.backlog = new Backlog<CommitJob>(maxQueued, clock);
  }

  /** Commits waiting for a write to succeed. */
  get queued(): number {
    return this.backlog.size;
  }

  /** How long the oldest commit still to be written has waited for its write (0: none waits). */
  get longestWaitMs(): number {
    return this.backlog.longestWaitMs();
  }

  /** Writes a commit after those of its conversation that wait; resolves when written or queued. */
  write(job: CommitJob): Promise<void> {
    return this.drain(placeOf(job.route, job.sessionDir, job.agentDir).key, job);
  }

  /** Tries every waiting conversation once more. */
  retryAll(): void {
    for (const key of this.backlog.keys()) void this.reports.track(this.drain(key, null));
  }

  /**
   * Writes a conversation's waiting commits in order, then `job`; on failure keeps what is left (bounded)
   * and retries later. One drain at a time per conversation.
   */
  private drain(key: string, job: CommitJob | null): Promise<void> {
    if (job !== null) {
      const dropped = this.backlog.push(key, job);
      if (dropped > 0) this.reports.dropped(key, dropped);
    }
    const run = (this.draining.get(key) ?? Promise.resolve()).then(() => this.drainNow(key));
    const settled = run.then(() => undefined, () => undefined);
    this.draining.set(key, settled);
    void settled.then(() => {
      if (this.draining.get(key) === settled) this.draining.delete(key);
    });
    return run;
  }

  /** The drain itself (see drain). */
  private async drainNow(key: string): Promise<void> {
    for (let next = this.backlog.first(key); next !== undefined; next = this.backlog.first(key)) {
      try {
        const written = await this.writer.write(next);
        if (written.done !== null) this.reports.written(next, written.records, written.done);
      } catch (error) {
        const attempt = this.backlog.attempts(key) + 1;
        this.reports.fail("append", error, { dir: key, queued: this.backlog.waiting(key), attempt });
        this.reports.writeFailed(key, error, this.backlog.size);
        this.backlog.retryLater(key, () => void this.reports.track(this.drain(key, null)));
        return;
      }
      this.backlog.done(key);
    }
    if (this.backlog.size === 0) await this.settledAll();
  }

  /** Nothing waits any more: say so, and let go of replayed spool files. */
  private async settledAll(): Promise<void> {
    this.reports.allWritten();
    if (this.spoolFiles.length === 0) return;
    const files = this.spoolFiles;
    this.spoolFiles = [];
    await this.spool.remove(files).catch((error) => this.reports.fail("spool", error));
  }

  /**
   * Replays what earlier runs saved in the spools (call before serving): each commit is written like a
   * new one, in order; those that fail wait in memory, and their files are kept until they are written.
   */
  async replay(unreadable: (dir: string, error: unknown) => void): Promise<Replayed> {
    const found = await this.spool.load();
    if (found.malformed > 0) this.reports.log("spool", { skipped: "malformed line", lines: found.malformed });
    for (const { dir, error } of found.unreadable) unreadable(dir, error);
    if (found.files.length === 0) return { commits: 0, files: [], waiting: 0 };
    this.spoolFiles = found.files;
    for (const job of found.jobs) await this.reports.track(this.write(job));
    this.reports.log("replay", { commits: found.jobs.length, files: found.files.length, waiting: this.backlog.size });
    if (this.backlog.size === 0) await this.settledAll();
    return { commits: found.jobs.length, files: found.files, waiting: this.backlog.size };
  }

  /** At shutdown: stops retrying and saves what still waits, so the next start writes it. */
  async saveUnwritten(): Promise<Unwritten> {
    this.backlog.stopTimers();
    const left = this.backlog.all();
    if (left.length === 0) return { kind: "none" };
    try {
      const path = await this.spool.save(left);
      this.backlog.clear();
      // Those files' commits are in the new file now.
      await this.spool.remove(this.spoolFiles).catch((error) => this.reports.fail("spool", error));
      this.reports.log("unwritten", { commits: left.length, saved: true });
      return { kind: "saved", commits: left.length, path };
    } catch (error) {
      this.reports.log("unwritten", { commits: left.length, saved: false, error: describe(error) });
      return { kind: "lost", commits: left.length, error: describe(error) };
    }
  }
}
