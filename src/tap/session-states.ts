/**
 * The lineage index of each conversation directory, kept in memory for at most `max` directories (LRU,
 * SESSIONTAP_MAX_SESSIONS) and rebuilt from the mirror files when a directory is first seen after a start
 * or after eviction, so a restart never re-mirrors history. Work on one directory is serialised: two
 * requests of one session never interleave their planning and writing.
 */

/** One directory's state. */
interface Entry<T> {
  index: T | null;
  tail: Promise<void>;
  users: number;
}

/** LRU map of directory → index, with a per-directory lock. */
export class SessionStates<T> {
  private entries = new Map<string, Entry<T>>();

  constructor(
    private readonly max: number,
    private readonly load: (dir: string) => Promise<T>,
  ) {}

  /** Number of directories held in memory. */
  get size(): number {
    return this.entries.size;
  }

  /** Runs `fn` with the directory's index while holding its lock; the index is loaded first if needed. */
  async withIndex<R>(dir: string, fn: (index: T) => Promise<R>): Promise<R> {
    let entry = this.entries.get(dir);
    if (entry === undefined) {
      entry = { index: null, tail: Promise.resolve(), users: 0 };
    } else {
      this.entries.delete(dir); // re-insert: most recently used last
    }
    this.entries.set(dir, entry);
    entry.users++;
    this.evict();
    const current = entry;
    const run = current.tail.then(async () => {
      current.index ??= await this.load(dir);
      return await fn(current.index);
    });
    current.tail = run.then(() => undefined, () => undefined);
    try {
      return await run;
    } finally {
      current.users--;
    }
  }

  /**
   * Drops a directory's state so its next use rebuilds it from disk (after a sweep removed files, or a
   * write whose outcome is unknown). Safe inside `withIndex`: the state is dropped, not mutated.
   */
  reset(dir: string): void {
    const entry = this.entries.get(dir);
    if (entry !== undefined) entry.index = null;
  }

  /** Evicts least recently used idle directories beyond the bound. */
  private evict(): void {
    if (this.entries.size <= this.max) return;
    for (const [dir, entry] of this.entries) {
      if (this.entries.size <= this.max) return;
      if (entry.users === 0) this.entries.delete(dir);
    }
  }
}
