/**
 * Slows down a client that guesses the token (docs/RELIABILITY.md "Trust boundaries"): its first few wrong
 * tokens are answered at once, then it must wait before its next try — 1 s, doubling to a minute — and a
 * try while it waits is refused unread, the right token included (so waiting is the only way on). A right
 * token starts the count afresh. Counts what it saw for health; knows clients by address, never a guess.
 */

/** What one client has done lately. */
interface Client {
  failures: number;
  /** Until when (ms) its tries are refused; 0 when they are not. */
  until: number;
}

/** What health shows. */
export interface TokenGateStats {
  /** Wrong tokens since start. */
  failures: number;
  /** Tries refused because their client had to wait. */
  slowed: number;
  /** Clients with wrong tokens on record now. */
  clients: number;
}

/** The gate of one tap. */
export class TokenGate {
  /** Wrong tokens a client may send before it has to wait. */
  static readonly FREE_FAILURES = 5;
  /** The longest wait. */
  static readonly MAX_WAIT_MS = 60_000;
  /** Clients remembered at most (the oldest are forgotten first). */
  static readonly MAX_CLIENTS = 10_000;
  private readonly clients = new Map<string, Client>();
  private failures = 0;
  private slowed = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  /** How long `peer` must still wait before a try is read (0: it may try now); a try refused is counted. */
  waitMs(peer: string): number {
    const client = this.clients.get(peer);
    const wait = client === undefined ? 0 : Math.max(0, client.until - this.clock());
    if (wait > 0) this.slowed++;
    return wait;
  }

  /** `peer` sent a wrong token: counted; returns its failures so far and how long it now waits (0: not yet). */
  failed(peer: string): { failures: number; waitMs: number } {
    this.failures++;
    const client = this.clients.get(peer) ?? { failures: 0, until: 0 };
    this.clients.delete(peer); // re-inserted: the most recent last, the oldest first to go
    client.failures++;
    const over = client.failures - TokenGate.FREE_FAILURES;
    const waitMs = over < 0 ? 0 : Math.min(1000 * 2 ** over, TokenGate.MAX_WAIT_MS);
    client.until = waitMs === 0 ? 0 : this.clock() + waitMs;
    this.clients.set(peer, client);
    for (const oldest of this.clients.keys()) {
      if (this.clients.size <= TokenGate.MAX_CLIENTS) break;
      this.clients.delete(oldest);
    }
    return { failures: client.failures, waitMs };
  }

  /** `peer` sent the right token: its count starts afresh. */
  succeeded(peer: string): void {
    this.clients.delete(peer);
  }

  /** What health shows. */
  stats(): TokenGateStats {
    return { failures: this.failures, slowed: this.slowed, clients: this.clients.size };
  }
}
