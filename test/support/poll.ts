/** Waiting on something another process does (a file it writes), bounded: never a bare sleep. */

/** Reads `read()` every 50 ms until `done(value)` or `ms` passed; returns the last value (the caller asserts on it). */
export async function pollUntil<T>(read: () => T, done: (value: T) => boolean, ms = 2_000): Promise<T> {
  const until = Date.now() + ms;
  let value = read();
  while (!done(value) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    value = read();
  }
  return value;
}
