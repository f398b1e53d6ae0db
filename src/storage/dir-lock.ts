// One live writer per session directory across processes (docs/RELIABILITY.md "One live writer per conversation"): a lock file under
// `<root>/.locks/` names its owner by pid and start time, so a dead owner's lock is proven stale; a lock of this very instance is its own.
import { createHash, randomUUID } from "node:crypto";
import { type FsAdapter, readIfThere, removeIfThere } from "./fs-adapter.ts";
import { ensureTrustedDir } from "./trusted-path.ts";
import { join } from "node:path/posix";
import { Retry } from "../utils/keyed-queue.ts";

/** Who holds a lock. */
export interface LockOwner {
  pid: number;
  /** The process's start time as the kernel counts it (/proc/<pid>/stat field 22); null where unknown. */
  start: string | null;
  host: string;
}

/** How a lock is waited for, and how liveness is judged. */
export interface LockOptions {
  self: LockOwner | Promise<LockOwner>;
  /** True while the owner process still runs (same pid, same start time). */
  isAlive: (owner: LockOwner) => Promise<boolean>;
  /** Longest wait for a live owner before giving up (the caller keeps its records and retries). */
  waitMs: number;
  clock: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Names this instance in its lock files (default: a new name): an engine started in place of a dead one takes over its locks. */
  holder?: string;
  /** Hears a lock file that could not be removed (it is retried), and when none is left waiting. */
  report?: LockReport;
}

/** What the locks say about their own failures (the mirror makes a stderr line, a health problem and an event of it). */
export interface LockReport {
  releaseFailed(dir: string, error: unknown, waiting: number): void;
  allReleased(): void;
}

/** The lock is held by another live writer beyond the wait. */
export class LockBusyError extends Error {
  override name = "LockBusyError";
  readonly code = "ELOCKED";
}

/** Locks of one mirror root. */
export class DirLocks {
  /** Stale locks taken over (their owner was proven dead). */
  staleTaken = 0;
  /** `.locks` was checked to be ours (a real directory, writable by nobody else) and has not vanished since. */
  private trusted = false;
  /** Names this instance in its lock files, so a lock this process's other users hold is never taken for its own. */
  private readonly holder: string;
  /** Lock paths a write of this instance holds, or is taking. */
  private readonly busy = new Set<string>();
  /** Files of this instance that could not be removed, retried: a lock (its directory, and the text that says it is ours), or the aside name a lock was made under. */
  private readonly unreleased = new Map<string, { dir: string; owner: string } | null>();
  private readonly retry = new Retry(250, 5_000);

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    private readonly options: LockOptions,
  ) {
    this.holder = options.holder ?? randomUUID();
  }

  /** The lock file of a directory: one name per directory, outside the conversation directories. */
  pathFor(dir: string): string {
    return join(this.root, ".locks", createHash("sha256").update(dir).digest("hex").slice(0, 32) + ".lock");
  }

  /** Files this instance could not remove yet (lock files, and the aside names they are made under). */
  get waiting(): number {
    return this.unreleased.size;
  }

  /**
   * Takes the directory's lock; resolves with its release, which never rejects (a failure is reported and
   * retried). Throws LockBusyError after `waitMs`.
   */
  async acquire(dir: string): Promise<() => Promise<void>> {
    const path = this.pathFor(dir);
    const me = JSON.stringify({ ...(await this.options.self), holder: this.holder });
    const deadline = this.options.clock() + this.options.waitMs;
    await this.retryReleases();
    await this.ensureLocksDir();
    let heldBy: string | null = "another write of this process";
    for (let attempt = 0;; attempt++) {
      if (!this.busy.has(path)) {
        this.busy.add(path);
        let taken: { held: boolean; owner: string | null } = { held: false, owner: null };
        try {
          taken = await this.take(path, me);
        } finally {
          if (!taken.held) this.busy.delete(path);
        }
        if (taken.held) return () => this.release(dir, path, me);
        heldBy = taken.owner;
      }
      if (this.options.clock() >= deadline) throw new LockBusyError(`writer lock of ${dir} is held by ${heldBy ?? "another process"}`);
      await this.options.sleep(Math.min(5 * 2 ** Math.min(attempt, 6), 200));
    }
  }

  /** Makes `.locks` and this process's owner ready before the first lock. */
  async prepare(): Promise<void> {
    await this.options.self;
    await this.ensureLocksDir();
  }

  /** Stops retrying releases after one last try (at shutdown). */
  async stop(): Promise<void> {
    this.retry.cancel();
    await this.retryReleases(false);
  }

  /**
   * Tries to take the lock once (creating it, reusing this instance's own, or removing a stale one and
   * creating it then); otherwise says who holds it.
   */
  private async take(path: string, me: string): Promise<{ held: boolean; owner: string | null }> {
    for (let attempt = 0;; attempt++) {
      let created: boolean;
      try {
        created = await this.create(path, me);
      } catch (error) {
        // A sweep may prune the empty .locks directory between our check and this create.
        if ((error as { code?: string }).code !== "ENOENT" || attempt > 3) throw error;
        this.trusted = false;
        await this.ensureLocksDir();
        continue;
      }
      if (created) return { held: true, owner: me };
      const raw = await this.readOwner(path);
      // Ours, and no write of ours holds it: a release that failed. Ours to reuse, never to wait for (its
      // release at the end of this write is the retry).
      if (raw === me) return { held: true, owner: me };
      if (raw === null) continue; // released meanwhile
      if (!(await this.isStale(path, raw))) return { held: false, owner: raw };
      const info = await this.fs.lstat(path);
      if (info === null || info.isSymbolicLink || (await this.readOwner(path)) !== raw) return { held: false, owner: raw }; // look again later
      await this.fs.unlink(path);
      this.staleTaken++;
    }
  }

  /** Releases a lock: removes the file if it is still ours. Never rejects: a failure is said and retried. */
  private async release(dir: string, path: string, me: string): Promise<void> {
    try {
      // Only our own lock is removed: a takeover after we were presumed dead must survive us.
      if ((await this.readOwner(path)) === me) await this.fs.unlink(path);
      this.forget(path);
    } catch (error) {
      this.failed(path, { dir, owner: me }, error);
    } finally {
      this.busy.delete(path);
    }
  }

  /** Tries again to remove what could not be removed (locks a write holds now are left alone); schedules the next try when some remain. */
  private async retryReleases(again = true): Promise<void> {
    for (const [path, lock] of [...this.unreleased]) {
      if (this.busy.has(path)) continue;
      try {
        if (lock === null) await removeIfThere(this.fs, path);
        else if ((await this.readOwner(path)) === lock.owner) await this.fs.unlink(path);
        this.forget(path);
      } catch (error) {
        this.options.report?.releaseFailed(lock?.dir ?? path, error, this.unreleased.size);
      }
    }
    if (again && this.unreleased.size > 0) this.retry.later(() => void this.retryReleases());
  }

  /** A file of ours is gone: no longer waiting; says so when it was the last. */
  private forget(path: string): void {
    if (!this.unreleased.delete(path) || this.unreleased.size > 0) return;
    this.retry.reset();
    this.options.report?.allReleased();
  }

  /** A file of ours could not be removed: remembered, said, and retried later. */
  private failed(path: string, lock: { dir: string; owner: string } | null, error: unknown): void {
    this.unreleased.set(path, lock);
    this.options.report?.releaseFailed(lock?.dir ?? path, error, this.unreleased.size);
    this.retry.later(() => void this.retryReleases());
  }

  /**
   * Makes `.locks` exist and checks it is ours, once: inside a root that is ours and open to nobody else
   * (checked before every write), nobody else can swap it afterwards. A link or a neighbour's directory
   * there is refused (UnsafePathError), never written into.
   */
  private async ensureLocksDir(): Promise<void> {
    if (this.trusted) return;
    await ensureTrustedDir(this.fs, this.root, join(this.root, ".locks"));
    this.trusted = true;
  }

  /**
   * Creates the lock file whole: written under a private name, then linked into place (a link never
   * replaces), so a writer killed mid-create leaves no empty lock that would look held.
   */
  private async create(path: string, owner: string): Promise<boolean> {
    const aside = `${path}.${randomUUID()}`;
    if (!(await this.fs.createExclusive(aside, owner, false))) return false;
    try {
      return await this.fs.link(aside, path);
    } finally {
      // The aside name is litter, not a lock: a failure to remove it never undoes the link (retried).
      await this.fs.unlink(aside).catch((error) => this.failed(aside, null, error));
    }
  }

  /** The lock file's text, or null when it vanished meanwhile. */
  private readOwner(path: string): Promise<string | null> {
    return readIfThere(this.fs, path);
  }

  /** A lock is stale when its owner is proven dead; an unreadable one (a crash while creating it) when old. */
  private async isStale(path: string, raw: string): Promise<boolean> {
    let owner: LockOwner;
    try {
      owner = JSON.parse(raw) as LockOwner;
    } catch {
      const info = await this.fs.lstat(path);
      return info !== null && this.options.clock() - info.mtimeMs > 2_000;
    }
    if (typeof owner.pid !== "number") return true;
    return !(await this.options.isAlive(owner));
  }
}
