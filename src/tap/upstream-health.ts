/**
 * The upstream's state as the tap sees it (docs/DESIGN.md "Health and exit"): an attempt fails when the
 * upstream cannot be reached or its connection breaks mid-answer; an HTTP error status is the upstream's
 * answer, passed on as it is, and counts as reaching it. One stderr line when it starts failing, a
 * reminder at most once a minute, one line when it answers again.
 */
import { describe } from "../utils/describe-error.ts";
import type { UpstreamState } from "../utils/upstream-problem.ts";
import { Alarm } from "../utils/alarm.ts";
import { plural } from "../utils/plural.ts";

/** The upstream's alarm. */
export class UpstreamHealth {
  private readonly alarm: Alarm;
  private readonly host: string;

  constructor(
    private readonly url: string,
    clock: () => number,
    stderr: (line: string) => void,
    /** What the first failure's line tells the user to check. */
    private readonly check = "Check --upstream / SESSIONTAP_UPSTREAM and the network",
  ) {
    this.alarm = new Alarm(clock, stderr);
    this.host = new URL(url).host;
  }

  /** An attempt failed: `broke` when the connection broke after the answer began. */
  failed(error: unknown, how: "unreachable" | "broke"): void {
    const why = describe(error);
    this.alarm.fail(
      why,
      (first, failures) =>
        !first
          ? `sessiontap: upstream ${this.host} still failing: ${failures} attempts since ${this.alarm.state().failingSince} (${why})`
          : how === "unreachable"
          ? `sessiontap: upstream ${this.host} cannot be reached (${why}); clients get 502 until it can. ${this.check}`
          : `sessiontap: upstream ${this.host} broke off an answer mid-stream (${why}); the client saw the stream cut`,
    );
  }

  /** The upstream answered (any status). */
  answered(): void {
    this.alarm.ok((failures) => `sessiontap: upstream ${this.host} answers again (after ${plural(failures, "failed attempt")})`);
  }

  /** What health shows. */
  state(): UpstreamState {
    return { url: this.url, ...this.alarm.state() };
  }
}
