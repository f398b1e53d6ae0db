/**
 * One live writer per conversation directory across processes (docs/RELIABILITY.md "One live writer per conversation"):
 * a lock file created exclusively under `<root>/.locks/`, naming its owner by pid and process start time
 * so a lock left by a dead process (or by a recycled pid) can be proven stale and taken over.
 */
import { createHash, randomUUID } from "node:crypto";
import type { FsAdapter } from "./fs-adapter.ts";
import { ensureTrustedDir } from "./trusted-path.ts";
import { join } from "./paths.ts";

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

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    private readonly options: LockOptions,
  ) {}

  /** The lock file of a directory: one name per directory, outside the conversation directories. */
  pathFor(dir: string): string {
    return join(this.root, ".locks", createHash("sha256").update(dir).digest("hex").slice(0, 32) + ".lock");
  }

  /** Takes the directory's lock; resolves with its release. Throws LockBusyError after `waitMs`. */
  async acquire(dir: string): Promise<() => Promise<void>> {
    const path = this.pathFor(dir);
    const me = JSON.stringify(await this.options.self);
    const deadline = this.options.clock() + this.options.waitMs;
    await this.ensureLocksDir();
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
      if (created) {
        return async () => {
          // Only our own lock is removed: a takeover after we were presumed dead must survive us.
          if ((await this.readOwner(path)) === me) await this.fs.unlink(path);
        };
      }
      const raw = await this.readOwner(path);
      if (raw !== null && (await this.isStale(path, raw))) {
        const info = await this.fs.lstat(path);
        if (info !== null && !info.isSymbolicLink && (await this.readOwner(path)) === raw) {
          await this.fs.unlink(path);
          this.staleTaken++;
        }
        continue;
      }
      if (this.options.clock() >= deadline) throw new LockBusyError(`writer lock of ${dir} is held by ${raw ?? "another process"}`);
      await this.options.sleep(Math.min(5 * 2 ** Math.min(attempt, 6), 200));
    }
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
      await this.fs.unlink(aside);
    }
  }

  /** The lock file's text, or null when it vanished meanwhile. */
  private async readOwner(path: string): Promise<string | null> {
    try {
      return await this.fs.readText(path);
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return null;
      throw error;
    }
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
