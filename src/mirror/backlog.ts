/**
 * Commits waiting for a write to succeed, per conversation directory (docs/RELIABILITY.md "Faults never reach the client"): bounded across
 * all directories (past the bound the oldest of a directory goes, and the caller counts and logs it),
 * retried with exponential backoff from 0.25 s to 30 s.
 */

const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 30_000;

/** One directory's waiting items. */
interface Queue<T> {
  items: T[];
  attempts: number;
  timer: ReturnType<typeof setTimeout> | null;
  /** When the oldest item became the oldest (its write has been due since). */
  headSince: number;
}

/** Bounded per-key queues with retry timers. */
export class Backlog<T> {
  private readonly queues = new Map<string, Queue<T>>();
  /** Items waiting, over all keys. */
  size = 0;

  constructor(
    private readonly max: number,
    private readonly clock: () => number,
  ) {}

  /** Adds an item; returns how many old items of this key had to be dropped to stay within the bound. */
  push(key: string, item: T): number {
    const queue = this.queues.get(key) ?? { items: [], attempts: 0, timer: null, headSince: this.clock() };
    this.queues.set(key, queue);
    queue.items.push(item);
    this.size++;
    let dropped = 0;
    while (this.size > this.max && queue.items.length > 1) {
      queue.items.shift();
      this.size--;
      dropped++;
    }
    return dropped;
  }

  /** The oldest `max` waiting items of a key, oldest first. */
  firstOf(key: string, max: number): T[] {
    return this.queues.get(key)?.items.slice(0, max) ?? [];
  }

  /** Removes the oldest `n` items of a key (they were written); forgets the key when it is empty. */
  done(key: string, n = 1): void {
    const queue = this.queues.get(key);
    if (queue === undefined || queue.items.length === 0) return;
    const gone = queue.items.splice(0, n).length;
    this.size -= gone;
    queue.headSince = this.clock();
    if (queue.items.length === 0) {
      if (queue.timer !== null) clearTimeout(queue.timer);
      this.queues.delete(key);
    }
  }

  /** Items waiting for a key. */
  waiting(key: string): number {
    return this.queues.get(key)?.items.length ?? 0;
  }

  /** How long the longest-waiting key's oldest item has waited (0 when nothing waits). */
  longestWaitMs(): number {
    let since = Number.POSITIVE_INFINITY;
    for (const queue of this.queues.values()) since = Math.min(since, queue.headSince);
    return since === Number.POSITIVE_INFINITY ? 0 : this.clock() - since;
  }

  /** Failed attempts so far for a key. */
  attempts(key: string): number {
    return this.queues.get(key)?.attempts ?? 0;
  }

  /** Every waiting item, key by key, oldest first within a key. */
  all(): T[] {
    return [...this.queues.values()].flatMap((queue) => queue.items);
  }

  /** Forgets every waiting item (they were saved elsewhere). */
  clear(): void {
    this.stopTimers();
    this.queues.clear();
    this.size = 0;
  }

  /** Keys with items waiting. */
  keys(): string[] {
    return [...this.queues.keys()];
  }

  /** Schedules `retry` for a key after the next backoff delay (timers never keep the process alive). */
  retryLater(key: string, retry: () => void): void {
    const queue = this.queues.get(key);
    if (queue === undefined) return;
    queue.attempts++;
    if (queue.timer !== null) clearTimeout(queue.timer);
    const delay = Math.min(RETRY_FIRST_MS * 2 ** (queue.attempts - 1), RETRY_MAX_MS);
    queue.timer = setTimeout(() => {
      queue.timer = null;
      retry();
    }, delay);
    (queue.timer as { unref?: () => void }).unref?.();
  }

  /** Stops every retry timer (on shutdown). */
  stopTimers(): void {
    for (const queue of this.queues.values()) if (queue.timer !== null) clearTimeout(queue.timer);
  }
}
