// What the mirror says about its own failures (docs/DESIGN.md "Health and exit"): one stderr line when writes start failing, a reminder at most once a minute,
// one line when they work again; the same for the events log, and writer locks not released yet.
import { describe } from "../utils/describe-error.ts";
import { Alarm } from "../utils/alarm.ts";
import { plural } from "../utils/plural.ts";

/** The mirror's alarms. */
export class MirrorAlarms {
  readonly writes: Alarm;
  readonly eventsLog: Alarm;
  readonly locks: Alarm;
  /** Answers given up because the engine fell behind the relay: said once, then at most once a minute. */
  readonly behind: Alarm;
  /** Borrowed session ids: said once, then at most once a minute. */
  readonly borrowedIds: Alarm;

  constructor(
    clock: () => number,
    stderr: (line: string) => void,
    private readonly root: string,
    private readonly eventsPath: string,
  ) {
    this.writes = new Alarm(clock, stderr);
    this.eventsLog = new Alarm(clock, stderr);
    this.locks = new Alarm(clock, stderr);
    this.behind = new Alarm(clock, stderr);
    this.borrowedIds = new Alarm(clock, stderr);
  }

  /** A request carried session `dir`'s id from another owner (`why`: credential or cwd) and went to `as`. */
  borrowed(dir: string, as: string, why: string, total: number): void {
    this.borrowedIds.fail(
      why,
      (first) =>
        first
          ? `sessiontap: a request carried the id of session ${dir} with another ${
            why === "cwd" ? "working directory" : "credential"
          } than the one that opened it; it is mirrored as a session of its own (${as}), never as part of ${dir}`
          : `sessiontap: ${total} requests so far carried another owner's session id; each is mirrored as a session of its own (the events log: session-split)`,
    );
  }

  /** The mirror gave up on an answer of `dir` (the engine was too far behind); `total` so far. */
  gaveUp(dir: string, total: number): void {
    this.behind.fail(
      "the mirror engine fell behind the relay",
      (first) =>
        first
          ? `sessiontap: the mirror engine fell behind the relay and gave up on an answer of ${dir}; its client got every byte, and the answer is written from that session's next request`
          : `sessiontap: the mirror engine still falls behind the relay: ${total} answers given up since start, each written from its session's next request`,
    );
  }

  /** A write to `dir` failed; `queued` commits now wait. */
  writeFailed(dir: string, error: unknown, queued: number): void {
    const why = describe(error);
    this.writes.fail(
      why,
      (first, failures) =>
        first
          ? `sessiontap: mirror write failed in ${dir} (${why}). The client is unaffected; ${
            plural(queued, "commit")
          } wait in memory and are retried. Fix that directory (permissions, free space), or run: sessiontap doctor`
          : `sessiontap: mirror writes still failing (${failures} attempts) in ${dir} (${why}); ${plural(queued, "commit")} waiting`,
    );
  }

  /** Every waiting commit is written. */
  writesRecovered(): void {
    this.writes.ok((failures) =>
      `sessiontap: mirror writes work again in ${this.root} (after ${plural(failures, "failed attempt")}); every waiting commit is written`
    );
  }

  /** The events log could not be written. */
  eventsLogFailed(error: unknown): void {
    const why = describe(error);
    this.eventsLog.fail(
      why,
      (first) =>
        first
          ? `sessiontap: events log ${this.eventsPath} not written (${why}); the mirror itself carries on`
          : `sessiontap: events log ${this.eventsPath} still not written (${why})`,
    );
  }

  /** The events log was written. */
  eventsLogWritten(): void {
    this.eventsLog.ok(() => `sessiontap: events log ${this.eventsPath} written again`);
  }

  /** A writer lock of `dir` could not be removed; `waiting` such files now wait for a retry. */
  lockReleaseFailed(dir: string, error: unknown, waiting: number): void {
    const why = describe(error);
    this.locks.fail(
      why,
      (first, failures) =>
        first
          ? `sessiontap: writer lock of ${dir} could not be released (${why}); the tap retries, and its own next write there reuses it`
          : `sessiontap: writer locks still not released (${failures} attempts, ${waiting} waiting; ${why})`,
    );
  }

  /** Every writer lock that could not be removed is removed now. */
  locksReleased(): void {
    this.locks.ok((failures) => `sessiontap: writer locks released again (after ${plural(failures, "failed attempt")})`);
  }
}
