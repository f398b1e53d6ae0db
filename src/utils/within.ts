/**
 * Waiting for something at most so long — health's question to the engine, a drain at shutdown, a store transaction —
 * with the timer always cleared, so no bound keeps a process alive or fires after the fact.
 */

/**
 * Waits for `work` at most `ms`; resolves true when it settled in time (fulfilled or rejected: the
 * caller watches its outcome elsewhere), false when the bound ran out first. Never rejects.
 * @example
 * if (!(await settlesWithin(draining, drainMs))) closeAll(); // shutdown is not held longer
 */
export function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return orAfter(work.then(() => true, () => true), ms, false);
}

/** What `deadline` gets back from `orAfter` when the bound ran out (no value of `work` can be it). */
const TIMED_OUT: unique symbol = Symbol("timed out");

/**
 * Resolves or rejects like `work`, or rejects with `timeout()` after `ms` (a late rejection of `work` is
 * then expected and not left unhandled).
 * @example
 * await deadline(tx, 10_000, () => new StoreTimeoutError("a store transaction took longer than 10000 ms"));
 */
export async function deadline<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  const outcome = await orAfter(work, ms, TIMED_OUT);
  if (outcome === TIMED_OUT) throw timeout();
  return outcome as T;
}

/**
 * Resolves like `work`, or with `fallback` when `ms` pass first (a late rejection of `work` is then
 * expected and not left unhandled).
 * @example
 * const asked = await orAfter(link.health(), 2000, "late" as const); // health is not held longer
 */
export async function orAfter<T, F>(work: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<F>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)));
  work.catch(() => undefined);
  try {
    return await Promise.race([work, limit]);
  } finally {
    clearTimeout(timer);
  }
}
