// Waiting for something at most so long, with the timer always cleared: no bound keeps a process alive or fires after the fact.

/** True when `work` settled (fulfilled or rejected: the caller watches its outcome elsewhere) within `ms`; never rejects. */
export function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return orAfter(work.then(() => true, () => true), ms, false);
}

const TIMED_OUT: unique symbol = Symbol("timed out");

export async function deadline<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  const outcome = await orAfter(work, ms, TIMED_OUT);
  if (outcome === TIMED_OUT) throw timeout();
  return outcome as T;
}

/** Settles like `work`, or resolves with `fallback` after `ms`; a late rejection of `work` is then not left unhandled. */
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
