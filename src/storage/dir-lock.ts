// One live writer per session directory across processes (docs/RELIABILITY.md "One live writer per conversation"): a lock file under
// `<root>/.locks/` names its owner by pid and kernel start time, so a dead owner's (or a recycled pid's) lock is proven stale.
import { createHash, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import process from "node:process";
import { type FsAdapter, readIfThere, removeIfThere } from "./fs-adapter.ts";
import { currentUid, ensureTrustedDir } from "./trusted-path.ts";
import { join } from "node:path/posix";
import { Retry } from "../utils/keyed-queue.ts";

/** Field 22 of /proc/<pid>/stat, or null off Linux (another system's /proc, or a file planted there, is not read as it). */
export async function processStart(fs: FsAdapter, pid: number, platform: string = process.platform): Promise<string | null> {
  if (platform !== "linux") return null;
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'. No such process: null.
  return await fs.readText(`/proc/${pid}/stat`).then((stat) => stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null, () => null);
}

export async function selfOwner(fs: FsAdapter): Promise<LockOwner> {
  return { pid: process.pid, start: await processStart(fs, process.pid), host: hostname() };
}

/** Same host (another host's lock is never judged), pid alive, same start time. */
export async function ownerAlive(fs: FsAdapter, owner: LockOwner): Promise<boolean> {
  if (owner.host !== hostname()) return true;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as { code?: string }).code === "ESRCH") return false;
  }
  if (owner.start === null) return true;
  const start = await processStart(fs, owner.pid);
  return start === null || start === owner.start;
}

// Temporary files a killed process leaves (a `.staging` publish, a restore's temporary file) carry their writer, so the next start can
// prove one stale; names made before writers were named are stale once a day old (no publish or restore takes that long).
const UNNAMED_STALE_MS = 24 * 60 * 60 * 1000;

const hostTag = () => createHash("sha256").update(hostname()).digest("hex").slice(0, 8);

export async function writerTag(fs: FsAdapter): Promise<string> {
  return `w${process.pid}-${(await processStart(fs, process.pid)) ?? "x"}-${hostTag()}`;
}

export function writerOf(name: string): LockOwner | null {
  const m = /(?:^|[.-])w(\d+)-(\d+|x)-([0-9a-f]{8})(?=[.-]|$)/.exec(name);
  return m === null ? null : { pid: Number(m[1]), start: m[2] === "x" ? null : m[2], host: m[3] };
}

/** Removes the provably stale leftovers `isLeftover` names; returns their names. Never throws: one that cannot be removed stays. */
export async function removeLeftovers(fs: FsAdapter, dir: string, isLeftover: (name: string) => boolean, now: number): Promise<string[]> {
  const removed: string[] = [];
  const uid = currentUid();
  for (const entry of await fs.readdir(dir).catch(() => [])) {
    if (!entry.isFile || !isLeftover(entry.name)) continue;
    const path = join(dir, entry.name);
    try {
      const info = await fs.lstat(path);
      if (info === null || !info.isFile || (uid >= 0 && info.uid !== uid)) continue;
      const writer = writerOf(entry.name);
      const stale = writer === null
        ? now - info.mtimeMs >= UNNAMED_STALE_MS
        : writer.host === hostTag() && !(await ownerAlive(fs, { pid: writer.pid, start: writer.start, host: hostname() }));
      if (!stale) continue;
      await fs.unlink(path);
      removed.push(entry.name);
    } catch {
      // gone meanwhile, or not ours to remove: it stays
    }
  }
  return removed;
}

export interface LockOwner {
  pid: number;
  start: string | null;
  host: string;
}

/** Unset fields default to this process and Date.now. */
export interface LockOptions {
  self?: LockOwner | Promise<LockOwner>;
  /** Longest wait for a live owner (the caller keeps its records and retries). */
  waitMs: number;
  clock?: () => number;
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
  private readonly options: Required<Omit<LockOptions, "holder" | "report">> & LockOptions;
  private readonly busy = new Set<string>();
  /** Files of ours that could not be removed yet: a lock (its directory and our text), or the aside name a lock was made under (null). */
  private readonly unreleased = new Map<string, { dir: string; owner: string } | null>();
  private readonly retry = new Retry(250, 5_000);

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    options: LockOptions,
  ) {
    this.holder = options.holder ?? randomUUID();
    this.options = { self: selfOwner(fs), clock: Date.now, ...options };
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
        const taken = await this.take(path, me).catch((error) => {
          this.busy.delete(path);
          this.trusted = false; // `.locks` may have gone (the sweep never prunes it): made and checked again next time
          throw error;
        });
        if (taken.held) return () => this.remove(path, { dir, owner: me }).finally(() => this.busy.delete(path));
        this.busy.delete(path);
        heldBy = taken.owner;
      }
      if (this.options.clock() >= deadline) throw new LockBusyError(`writer lock of ${dir} is held by ${heldBy ?? "another process"}`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(5 * 2 ** Math.min(attempt, 6), 200)));
    }
  }

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
    for (;;) {
      if (await this.create(path, me)) return { held: true, owner: me };
      const raw = await readIfThere(this.fs, path);
      // Ours, and no write of ours holds it: a release that failed, ours to reuse (this write's release is the retry).
      if (raw === me) return { held: true, owner: me };
      if (raw === null) continue; // released meanwhile
      if (!(await this.isStale(path, raw))) return { held: false, owner: raw };
      if ((await readIfThere(this.fs, path)) !== raw) return { held: false, owner: raw }; // look again later
      await this.fs.unlink(path);
    }
  }

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
    return !(await ownerAlive(this.fs, owner));
  }
}
