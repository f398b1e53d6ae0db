// One thing that can fail while the tap runs: the first failure said at once, then at most a reminder a minute, and one line when it works again
// (docs/DESIGN.md "Health and exit"); and waits bounded in time, their timer always cleared.
export const REMIND_MS = 60_000;

export class Alarm {
  private failingSince: number | null = null;
  private lastPrinted = 0;
  private consecutive = 0;
  private lastError: string | null = null;
  private lastFailure: number | null = null;
  private lastSuccess: number | null = null;

  constructor(private readonly clock: () => number, private readonly stderr: (line: string) => void) {}

  get failing(): boolean {
    return this.failingSince !== null;
  }

  /** `line` is built only when it will be printed. */
  fail(error: string, line: (first: boolean, failures: number) => string): void {
    const now = this.clock();
    const first = this.failingSince === null;
    this.failingSince ??= now;
    this.consecutive++;
    this.lastError = error;
    this.lastFailure = now;
    if (!first && now - this.lastPrinted < REMIND_MS) return;
    this.lastPrinted = now;
    this.stderr(line(first, this.consecutive));
  }

  /** Prints `line` once when it ends a run of failures. */
  ok(line: (failures: number, sinceMs: number) => string): void {
    const [now, since, failures] = [this.clock(), this.failingSince, this.consecutive];
    this.lastSuccess = now;
    if (since === null) return;
    this.failingSince = null;
    this.consecutive = 0;
    this.stderr(line(failures, now - since));
  }

  state() {
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    return {
      failing: this.failing,
      consecutiveFailures: this.consecutive,
      lastError: this.lastError,
      lastFailure: iso(this.lastFailure),
      lastSuccess: iso(this.lastSuccess),
      failingSince: iso(this.failingSince),
    };
  }
}

/** True when `work` settled (fulfilled or rejected: the caller watches its outcome elsewhere) within `ms`; never rejects. */
export function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return orAfter(work.then(() => true, () => true), ms, false);
}

const TIMED_OUT: unique symbol = Symbol("timed out");

export async function deadline<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  const outcome = await orAfter(work, ms, TIMED_OUT);
  if (outcome === TIMED_OUT) throw timeout();
  return outcome;
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
