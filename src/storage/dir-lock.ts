// One live writer per session directory across processes (docs/RELIABILITY.md "One live writer per conversation"): a lock file under
// `<root>/.locks/` names its owner by pid and start time, so a dead owner's lock is proven stale; a lock of this very instance is its own.
import { createHash, randomUUID } from "node:crypto";
import { type FsAdapter, readIfThere, removeIfThere } from "./fs-adapter.ts";
import { ensureTrustedDir } from "./trusted-path.ts";
import { join } from "node:path/posix";
import { Retry } from "../utils/keyed-queue.ts";

export interface LockOwner {
  pid: number;
  /** /proc/<pid>/stat field 22; null where unknown. */
  start: string | null;
  host: string;
}

export interface LockOptions {
  self: LockOwner | Promise<LockOwner>;
  isAlive: (owner: LockOwner) => Promise<boolean>;
  /** Longest wait for a live owner (the caller keeps its records and retries). */
  waitMs: number;
  clock: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Names this instance in its lock files (default: a new name): an engine started in place of a dead one takes over its locks. */
  holder?: string;
  report?: LockReport;
}

export interface LockReport {
  releaseFailed(dir: string, error: unknown, waiting: number): void;
  allReleased(): void;
}

export class LockBusyError extends Error {
  override name = "LockBusyError";
  readonly code = "ELOCKED";
}

export class DirLocks {
  private trusted = false;
  private readonly holder: string;
  private readonly busy = new Set<string>();
  /** Files of ours that could not be removed yet: a lock (its directory and our text), or the aside name a lock was made under (null). */
  private readonly unreleased = new Map<string, { dir: string; owner: string } | null>();
  private readonly retry = new Retry(250, 5_000);

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    private readonly options: LockOptions,
  ) {
    this.holder = options.holder ?? randomUUID();
  }

  pathFor(dir: string): string {
    return join(this.root, ".locks", createHash("sha256").update(dir).digest("hex").slice(0, 32) + ".lock");
  }

  get waiting(): number {
    return this.unreleased.size;
  }

  /** Resolves with the lock's release, which never rejects (a failure is reported and retried); LockBusyError after `waitMs`. */
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

  async stop(): Promise<void> {
    this.retry.cancel();
    await this.retryReleases(false);
  }

  /** Creates the lock, reuses our own, or removes a stale one and creates it then; otherwise says who holds it. */
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
      const raw = await readIfThere(this.fs, path);
      // Ours, and no write of ours holds it: a release that failed, ours to reuse (this write's release is the retry).
      if (raw === me) return { held: true, owner: me };
      if (raw === null) continue; // released meanwhile
      if (!(await this.isStale(path, raw))) return { held: false, owner: raw };
      const info = await this.fs.lstat(path);
      if (info === null || info.isSymbolicLink || (await readIfThere(this.fs, path)) !== raw) return { held: false, owner: raw }; // look again later
      await this.fs.unlink(path);
    }
  }

  private async release(dir: string, path: string, me: string): Promise<void> {
    try {
      await this.remove(path, { dir, owner: me });
    } finally {
      this.busy.delete(path);
    }
  }

  /** Locks a write holds now are left alone. */
  private async retryReleases(again = true): Promise<void> {
    for (const [path, lock] of [...this.unreleased]) if (!this.busy.has(path)) await this.remove(path, lock, again);
  }

  /** A lock only while it is still ours (a takeover after we were presumed dead must survive us); a failure is said and retried. */
  private async remove(path: string, lock: { dir: string; owner: string } | null, again = true): Promise<void> {
    try {
      if (lock === null) await removeIfThere(this.fs, path);
      else if ((await readIfThere(this.fs, path)) === lock.owner) await this.fs.unlink(path);
    } catch (error) {
      this.unreleased.set(path, lock);
      this.options.report?.releaseFailed(lock?.dir ?? path, error, this.unreleased.size);
      if (again) this.retry.later(() => void this.retryReleases());
      return;
    }
    if (!this.unreleased.delete(path) || this.unreleased.size > 0) return;
    this.retry.reset();
    this.options.report?.allReleased();
  }

  /** Once: inside a root that is ours and open to nobody else, nobody can swap `.locks` afterwards. */
  private async ensureLocksDir(): Promise<void> {
    if (this.trusted) return;
    await ensureTrustedDir(this.fs, this.root, join(this.root, ".locks"));
    this.trusted = true;
  }

  /** Written aside, then linked into place: a writer killed mid-create leaves no empty lock that would look held. */
  private async create(path: string, owner: string): Promise<boolean> {
    const aside = `${path}.${randomUUID()}`;
    if (!(await this.fs.createExclusive(aside, owner, false))) return false;
    try {
      return await this.fs.link(aside, path);
    } finally {
      await this.remove(aside, null); // litter, not a lock: a failure to remove it never undoes the link
    }
  }

  /** Stale: its owner proven dead, or unreadable (a crash while creating it) and old. */
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
