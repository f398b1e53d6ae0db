// The tap's token, however presented (bearer, cookie, login link, Proxy-Authorization): one throttle and one count
// (docs/DESIGN.md "Trust boundaries").
import { Buffer } from "node:buffer";
import { createHash, timingSafeEqual } from "node:crypto";
import { Alarm } from "../utils/alarm.ts";

/** What the events log is told of a wrong token: the client's address and its counts, never the guess. */
export type TokenFailure = { peer: string; failures: number; waitMs: number };
/** A number: the seconds the client must still wait before a token it offers is read. */
export type TokenCheck = "ok" | "wrong" | number;

/** Compares in time that does not depend on where the strings differ. */
export function sameSecret(a: string, b: string): boolean {
  const [x, y] = [a, b].map((s) => createHash("sha256").update(s).digest());
  return timingSafeEqual(x, y) && a.length === b.length;
}

export function generateToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}

// After FREE_FAILURES wrong tokens a client (by address) waits 1 s, doubling to a minute, and a try meanwhile is refused
// unread, the right token too: waiting is the only way on. A right token starts its count afresh.
export class TokenGate {
  static readonly FREE_FAILURES = 5;
  static readonly MAX_WAIT_MS = 60_000;
  static readonly MAX_CLIENTS = 10_000;
  /** What the login link's cookie holds: derived, so the token itself never sits in a cookie jar. */
  readonly cookie: string | null;
  private readonly clients = new Map<string, { failures: number; until: number }>();
  private readonly counts = { failures: 0, slowed: 0 };
  private readonly clock: () => number;
  private readonly alarm: Alarm;

  constructor(
    readonly token: string | null,
    private readonly options: { clock?: () => number; stderr?: (line: string) => void; onFailure?: (failure: TokenFailure) => void } = {},
  ) {
    this.cookie = token === null ? null : createHash("sha256").update(`sessiontap access\u0000${token}`).digest("base64url");
    this.clock = options.clock ?? Date.now;
    this.alarm = new Alarm(this.clock, options.stderr ?? (() => {}));
  }

  /** Reads `given` (the token, or the cookie's value) from `peer`, unless `peer` must wait; counts and tells a wrong one. */
  check(peer: string, given: string, as: "token" | "cookie" = "token"): TokenCheck {
    const client = this.clients.get(peer) ?? { failures: 0, until: 0 };
    const waitMs = client.until - this.clock();
    if (waitMs > 0) {
      this.counts.slowed++;
      return Math.ceil(waitMs / 1000);
    }
    const expected = as === "token" ? this.token : this.cookie;
    this.clients.delete(peer); // re-inserted below: the most recent last, the oldest first to go
    if (expected !== null && sameSecret(given, expected)) return "ok";
    this.counts.failures++;
    client.failures++;
    const over = client.failures - TokenGate.FREE_FAILURES;
    const wait = over < 0 ? 0 : Math.min(1000 * 2 ** over, TokenGate.MAX_WAIT_MS);
    client.until = this.clock() + wait;
    this.clients.set(peer, client);
    for (const oldest of this.clients.keys()) {
      if (this.clients.size <= TokenGate.MAX_CLIENTS) break;
      this.clients.delete(oldest);
    }
    this.options.onFailure?.({ peer, failures: client.failures, waitMs: wait });
    const said = `wrong tokens from ${peer} (${client.failures} so far): it now waits ${wait / 1000} s before each try (health: token.failures)`;
    if (wait > 0) this.alarm.fail("wrong tokens", (first) => `sessiontap: ${first ? "" : "still "}${said}`);
    return "wrong";
  }

  stats(): { failures: number; slowed: number; clients: number } {
    return { ...this.counts, clients: this.clients.size };
  }
}
