// One thing that can fail while the tap runs (mirror writes, the upstream, the events log), and the lines it prints about it: the first failure at once, then
// at most one reminder a minute while failures continue, and one line when it works again (docs/DESIGN.md "Health and exit").

/** How often a continuing failure is repeated on stderr, at most. */
export const REMIND_MS = 60_000;

/** What health shows of one alarm. */
export interface AlarmState {
  failing: boolean;
  /** Failures since the last success (or since start). */
  consecutiveFailures: number;
  lastError: string | null;
  lastFailure: string | null;
  lastSuccess: string | null;
  /** When the current run of failures began (null while working). */
  failingSince: string | null;
}

/** A failure channel with rate-limited stderr lines. */
export class Alarm {
  private failingSince: number | null = null;
  private lastPrinted = Number.NEGATIVE_INFINITY;
  private consecutive = 0;
  private lastError: string | null = null;
  private lastFailure: number | null = null;
  private lastSuccess: number | null = null;

  constructor(
    private readonly clock: () => number,
    private readonly stderr: (line: string) => void,
  ) {}

  /** True while the latest attempt failed. */
  get failing(): boolean {
    return this.failingSince !== null;
  }

  /** Records a failure; `line` (built only when it will be printed) goes to stderr first time and once a minute after. */
  fail(error: string, line: (first: boolean, failures: number) => string): void {
    const now = this.clock();
    const first = this.failingSince === null;
    this.failingSince ??= now;
    this.consecutive++;
    this.lastError = error;
    this.lastFailure = now;
    if (first || now - this.lastPrinted >= REMIND_MS) {
      this.lastPrinted = now;
      this.stderr(line(first, this.consecutive));
    }
  }

  /** Records a success; prints `line` once when it ends a run of failures. */
  ok(line: (failures: number, sinceMs: number) => string): void {
    const now = this.clock();
    this.lastSuccess = now;
    if (this.failingSince !== null) {
      const since = this.failingSince;
      const failures = this.consecutive;
      this.failingSince = null;
      this.consecutive = 0;
      this.lastPrinted = Number.NEGATIVE_INFINITY;
      this.stderr(line(failures, now - since));
    }
  }

  /** What health reports. */
  state(): AlarmState {
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
