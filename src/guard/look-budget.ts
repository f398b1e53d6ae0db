/** The guard's bound on work: at most `max` looks in any minute, across all sessions. */
export class LookBudget {
  private readonly times: number[] = [];

  constructor(private readonly max: number, private readonly windowMs = 60_000) {}

  /** Takes one look at `now`: 0 when allowed, else how many milliseconds until one is. */
  take(now: number): number {
    while (this.times.length > 0 && this.times[0] <= now - this.windowMs) this.times.shift();
    if (this.times.length >= this.max) return this.times[0] + this.windowMs - now + 1;
    this.times.push(now);
    return 0;
  }
}
