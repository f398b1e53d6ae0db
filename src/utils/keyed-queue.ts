// The one queue and the one retry of the write path (docs/DESIGN.md "Writes"): per key, bounded over all keys, one run at a time.

/** A delay doubling from `firstMs` to `maxMs`; it never keeps the process alive. */
export class Retry {
  attempts = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly firstMs: number,
    private readonly maxMs: number,
  ) {}

  /** Unless a run is already due. */
  later(run: () => void, ms = Math.min(this.firstMs * 2 ** this.attempts, this.maxMs)): void {
    this.attempts++;
    if (this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      run();
    }, ms);
    (this.timer as { unref?: () => void }).unref?.();
  }

  reset(): void {
    this.cancel();
    this.attempts = 0;
  }

  cancel(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

/** `taken`: how many items the run in flight was handed. `held`: waiting out the delay its failure named, which new items and flushes
 * wait out too; `until` settles when the run after it ends. */
type Key<T> = { items: T[]; since: number; run: Promise<void> | null; retry: Retry; taken: number; held: { until: Promise<void>; release: () => void } | null };

export interface QueueEvents {
  dropped?(key: string, n: number): void;
  /** A delay returned is waited out before the key runs again; otherwise the retry backs off, and a new item runs it at once. */
  failed(key: string, error: unknown, attempt: number): number | void;
  empty?(): void;
}

/** Items per key; `work` takes the waiting items of one key and resolves with how many of them it is done with. */
export class KeyedQueue<T> {
  private readonly keys = new Map<string, Key<T>>();
  size = 0;
  private stopped = false;

  constructor(
    private readonly work: (key: string, items: readonly T[]) => Promise<number>,
    private readonly max: number,
    private readonly clock: () => number,
    private readonly events: QueueEvents,
    private readonly retry: { firstMs: number; maxMs: number } = { firstMs: 250, maxMs: 30_000 },
  ) {}

  /** Resolves when the run it joined ended (written, or left waiting). An item that is the last one waiting (===) and not yet handed
   * to a run is not queued twice: a wake-up pushed once per commit while the key is held stays one wake-up. */
  push(key: string, item: T): Promise<void> {
    let entry = this.keys.get(key);
    if (entry === undefined) {
      entry = { items: [], since: this.clock(), run: null, retry: new Retry(this.retry.firstMs, this.retry.maxMs), taken: 0, held: null };
      this.keys.set(key, entry);
    }
    if (entry.items.length === entry.taken || entry.items.at(-1) !== item) {
      entry.items.push(item);
      this.size++;
      let dropped = 0;
      for (; this.size > this.max && entry.items.length > 1; dropped++, this.size--) entry.items.shift();
      if (dropped > 0) this.events.dropped?.(key, dropped);
    }
    return entry.held !== null ? Promise.resolve() : this.kick(key);
  }

  /** Runs a key now (its retry, if due, is forgotten). */
  kick(key: string): Promise<void> {
    const entry = this.keys.get(key);
    if (entry === undefined || this.stopped) return Promise.resolve();
    entry.run ??= this.drain(key, entry).finally(() => (entry.run = null));
    // An item that arrived during a run is taken by that run's loop; one that arrived after it started its last await waits for the next.
    return entry.run;
  }

  private async drain(key: string, entry: Key<T>): Promise<void> {
    await Promise.resolve(); // items pushed in the same turn go together
    entry.retry.cancel();
    entry.held?.release();
    entry.held = null;
    while (entry.items.length > 0 && !this.stopped) {
      let done: number;
      entry.taken = entry.items.length;
      try {
        done = await this.work(key, entry.items);
      } catch (error) {
        entry.taken = 0;
        const ms = this.events.failed(key, error, entry.retry.attempts + 1);
        if (typeof ms !== "number") return entry.retry.later(() => void this.kick(key));
        let release = () => {};
        const released = new Promise<void>((resolve) => (release = resolve));
        entry.held = { until: released.then(() => this.kick(key)), release };
        return entry.retry.later(release, ms);
      }
      entry.taken = 0;
      this.size -= entry.items.splice(0, done).length;
      entry.since = this.clock();
      entry.retry.reset();
    }
    if (entry.items.length > 0) return;
    this.keys.delete(key);
    if (this.size === 0) this.events.empty?.();
  }

  /** Runs every key once more; a held one when its delay is out. */
  async flush(): Promise<void> {
    await Promise.all([...this.keys].map(([key, entry]) => entry.held?.until ?? this.kick(key)));
  }

  longestWaitMs(): number {
    const since = Math.min(...[...this.keys.values()].map((k) => k.since));
    return Number.isFinite(since) ? this.clock() - since : 0;
  }

  waiting(key: string): number {
    return this.keys.get(key)?.items.length ?? 0;
  }

  /** Hands over every waiting item, key by key, and forgets them. */
  stop(): T[] {
    this.stopped = true;
    for (const entry of this.keys.values()) entry.retry.cancel(), entry.held?.release();
    const left = [...this.keys.values()].flatMap((k) => k.items);
    this.keys.clear();
    this.size = 0;
    return left;
  }
}
