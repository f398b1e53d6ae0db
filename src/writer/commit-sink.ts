/**
 * A second place commits go besides the local tree (a shared store for teams, docs/DESIGN.md "The shared store"). Each sink plans
 * every commit against its own lineage, so each is exactly-once on its own.
 */
import type { CommitJob } from "../protocol/commit-job.ts";

/** Where commits are written. Implementations never reject and never throw into the client path. */
export interface CommitSink {
  /** A short name for health and the events log ("postgres"). */
  readonly name: string;
  /** Writes one response's records; resolves when written, spooled or given up. */
  commit(job: CommitJob): Promise<void>;
  /** Waits for writes in flight, at most `boundMs`. */
  flush(boundMs: number): Promise<void>;
  /** What /_tap/health shows of this sink. */
  health(): Record<string, unknown>;
  /** Releases connections and timers. */
  close(): Promise<void>;
}
