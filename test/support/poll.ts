/**
 * Waiting on something another process or a timer does (a file it writes, a health it reports), bounded:
 * never a bare sleep. A wait that runs out throws, naming what it waited for and the last value seen, so
 * a timeout fails where it happened instead of later with a misleading message.
 */

/** Reads `read()` every 50 ms until `done(value)`; returns that value, or throws after `ms` with the last one. */
export async function pollAsync<T>(read: () => T | Promise<T>, done: (value: T) => boolean, ms = 10_000, what = "the condition"): Promise<T> {
  const until = Date.now() + ms;
  let value = await read();
  while (!done(value)) {
    if (Date.now() >= until) throw new Error(`timed out after ${ms} ms waiting for ${what}; last value: ${preview(value)}`);
    await new Promise((r) => setTimeout(r, 50));
    value = await read();
  }
  return value;
}

/** `pollAsync` for a synchronous read (a file on disk), with a shorter default bound. */
export function pollUntil<T>(read: () => T, done: (value: T) => boolean, ms = 2_000, what?: string): Promise<T> {
  return pollAsync(read, done, ms, what);
}

/** Resolves with `promise`, or rejects naming `what` after `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** A value, short enough for an error message. */
function preview(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
}
