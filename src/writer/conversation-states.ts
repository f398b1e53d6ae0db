/**
 * What a writer remembers of each conversation, kept in memory for at most `max` conversations (LRU,
 * SESSIONTAP_MAX_SESSIONS) and rebuilt from what was written when a conversation is first seen after a
 * start or after eviction, so a restart never re-mirrors history. Work on one conversation is serialised:
 * two requests of one session never interleave their planning and writing. Generic: any state, any key.
 */

/** One conversation's state. */
interface Entry<T> {
  state: T | null;
  tail: Promise<void>;
  users: number;
}

/** LRU map of key → state, with a lock per key. */
export class ConversationStates<T> {
  private entries = new Map<string, Entry<T>>();

  constructor(
    private readonly max: number,
    private readonly load: (key: string) => Promise<T>,
  ) {}

  /** Number of conversations held in memory. */
  get size(): number {
    return this.entries.size;
  }

  /** Runs `fn` with the conversation's state while holding its lock; the state is loaded first if needed. */
  async withState<R>(key: string, fn: (state: T) => Promise<R>): Promise<R> {
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { state: null, tail: Promise.resolve(), users: 0 };
    } else {
      this.entries.delete(key); // re-insert: most recently used last
    }
    this.entries.set(key, entry);
    entry.users++;
    this.evict();
    const current = entry;
    const run = current.tail.then(async () => {
      current.state ??= await this.load(key);
      return await fn(current.state);
    });
    current.tail = run.then(() => undefined, () => undefined);
    try {
      return await run;
    } finally {
      current.users--;
    }
  }

  /**
   * Drops a conversation's state so its next use rebuilds it from disk (after a sweep removed files, or a
   * write whose outcome is unknown). Safe inside `withState`: the state is dropped, not mutated.
   */
  reset(key: string): void {
    const entry = this.entries.get(key);
    if (entry !== undefined) entry.state = null;
  }

  /** Evicts least recently used idle conversations beyond the bound. */
  private evict(): void {
    if (this.entries.size <= this.max) return;
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= this.max) return;
      if (entry.users === 0) this.entries.delete(key);
    }
  }
}
