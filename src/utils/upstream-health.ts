// The upstream as the tap sees it (docs/DESIGN.md "Health and exit"): an attempt fails when the upstream cannot be reached or
// breaks off an answer; an HTTP error status is an answer, and counts as reaching it.
import { describe, plural } from "./describe-error.ts";
import { Alarm } from "./alarm.ts";

export class UpstreamHealth {
  private readonly alarm: Alarm;
  private readonly host: string;

  constructor(
    private readonly url: string,
    clock: () => number,
    stderr: (line: string) => void,
    /** The events log's `upstream-error` line. */
    private readonly log: (fields: { how: string; error: string; upstream: string }) => void,
    private readonly check = "Check --upstream / SESSIONTAP_UPSTREAM and the network",
  ) {
    this.alarm = new Alarm(clock, stderr);
    this.host = new URL(url).host;
  }

  failed(error: unknown, how: "unreachable" | "broke"): void {
    const why = describe(error);
    this.log({ how, error: why, upstream: this.host });
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

  answered(): void {
    this.alarm.ok((failures) => `sessiontap: upstream ${this.host} answers again (after ${plural(failures, "failed attempt")})`);
  }

  state() {
    return { url: this.url, ...this.alarm.state() };
  }

  problems(): string[] {
    const s = this.alarm.state();
    return s.failing ? [`upstream: ${this.host} failing since ${s.failingSince} (${plural(s.consecutiveFailures, "attempt")}; ${s.lastError})`] : [];
  }
}
