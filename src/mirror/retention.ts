/**
 * When the retention sweep runs (docs/DESIGN.md "The mirror"): lazily, at most once a minute while traffic
 * flows, never two at once; what it removed makes the affected directories be read again.
 */
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { type SweepResult, sweepTree } from "../storage/sweep.ts";

const SWEEP_EVERY_MS = 60_000;

/** Throttles the sweep of one root. */
export class RetentionSweeper {
  private last = Number.NEGATIVE_INFINITY;
  private running: Promise<void> | null = null;

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    private readonly days: number,
    private readonly clock: () => number,
    private readonly done: (result: SweepResult) => void,
    private readonly failed: (error: unknown) => void,
  ) {}

  /** Starts a sweep if retention is on, none runs, and a minute passed since the last one. */
  maybe(): void {
    const now = this.clock();
    if (this.days === 0 || this.running !== null || now - this.last < SWEEP_EVERY_MS) return;
    this.last = now;
    this.running = sweepTree(this.fs, this.root, now - this.days * 86_400_000)
      .then(this.done, this.failed)
      .finally(() => (this.running = null));
  }

  /** Resolves when the sweep in progress (if any) is done. */
  settled(): Promise<void> {
    return this.running ?? Promise.resolve();
  }
}
