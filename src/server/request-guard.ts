// Who may use the tap (docs/DESIGN.md "Trust boundaries"): by its headers, the kernel's socket table, and the token, through one throttle.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import { sameSecret } from "../protocol/session-id.ts";
import { Alarm } from "../utils/alarm.ts";
import { hostName, isLoopback } from "../viewer/hosts.ts";

export type RequestFacts = Record<"method" | "path", string> & Record<"host" | "origin" | "secFetchSite" | "secFetchMode", string | null>;

function ownOrigin(origin: string, host: string | null, allowedHosts: ReadonlySet<string> | null): boolean {
  const url = URL.canParse(origin) ? new URL(origin) : null;
  const addressed = `${url?.protocol}//${host?.trim()}`;
  if (host === null || url === null || !/^https?:$/.test(url.protocol) || !URL.canParse(addressed) || url.host !== new URL(addressed).host) return false;
  return allowedHosts === null || allowedHosts.has(hostName(host));
}

/** Why a request a web page made for another site or origin is refused, or null; following a link to the viewer reads nothing. */
export function crossSiteRefusal(facts: RequestFacts, allowedHosts: ReadonlySet<string> | null): string | null {
  const site = facts.secFetchSite?.trim().toLowerCase() ?? null;
  const navigation = (facts.method === "GET" || facts.method === "HEAD") && facts.secFetchMode === "navigate" && facts.path.startsWith("/_tap/");
  if ((site === "cross-site" || site === "same-site") && !navigation) {
    return "a web page of another site sent this request (Sec-Fetch-Site); the tap serves Claude Code and its own viewer only";
  }
  if (facts.origin !== null && !ownOrigin(facts.origin.trim(), facts.host, allowedHosts)) {
    return "a web page of another origin sent this request (Origin); the tap serves Claude Code and its own viewer only";
  }
  return null;
}

// One spelling per address: as URL writes an IPv6 one, IPv4 as IPv4-mapped.
function canonical(address: string): string {
  const bare = address.replace(/^\[|\]$/g, "");
  const url = `http://[${bare.includes(":") ? bare : `::ffff:${bare}`}]`;
  return URL.canParse(url) ? new URL(url).hostname : bare;
}

// /proc/net/tcp{,6} prints 32-bit words in the host's byte order: little-endian on every target the tap ships for.
function procAddress(hex: string): string {
  const bytes = (hex.match(/.{8}/g) ?? []).flatMap((word) => (word.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16)));
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] << 8) | bytes[2 * i + 1]).toString(16));
  return canonical(bytes.length === 4 ? bytes.join(".") : groups.join(":"));
}

/** The uid of the one established row of /proc/net/tcp{,6} from `peer` to `port` on loopback; null: none or several. */
export function socketUid(tables: string, peer: { address: string; port: number }, port: number): number | null {
  const uids: number[] = [];
  const want = canonical(peer.address);
  for (const line of tables.split("\n")) {
    const [, local, remote, state, , , , uid] = line.trim().split(/\s+/);
    // Established only: a TIME_WAIT row outlives its socket (its port may be reused) and says uid 0.
    if (state !== "01" || uid === undefined) continue;
    const [localAddress, localPort] = local.split(":");
    const [remoteAddress, remotePort] = remote.split(":");
    if (parseInt(localPort, 16) !== peer.port || parseInt(remotePort, 16) !== port || procAddress(localAddress) !== want) continue;
    if (isLoopback(procAddress(remoteAddress))) uids.push(Number(uid));
  }
  return uids.length === 1 ? uids[0] : null;
}

export type TokenCheck = "ok" | "wrong" | number;

export const generateToken = (): string => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");

// After FREE_FAILURES wrong tokens a client waits 1 s, doubling to a minute; a try meanwhile, the right token too, is refused unread.
export class TokenGate {
  static readonly FREE_FAILURES = 5;
  static readonly MAX_WAIT_MS = 60_000;
  /** What the login link's cookie holds: derived, so the token itself never sits in a cookie jar. */
  readonly cookie: string | null;
  private readonly clients = new LRUCache<string, { failures: number; until: number }>({ max: 10_000 });
  private readonly counts = { failures: 0, slowed: 0 };
  private readonly clock: () => number;
  private readonly alarm: Alarm;

  constructor(
    readonly token: string | null,
    private readonly options: {
      clock?: () => number;
      stderr?: (line: string) => void;
      /** Told of each wrong token: the client's address and its counts, never the guess. */
      onFailure?: (failure: { peer: string; failures: number; waitMs: number }) => void;
    } = {},
  ) {
    this.cookie = token === null ? null : createHash("sha256").update(`sessiontap access\u0000${token}`).digest("base64url");
    this.clock = options.clock ?? Date.now;
    this.alarm = new Alarm(this.clock, options.stderr ?? (() => {}));
  }

  check(peer: string, given: string, as: "token" | "cookie" = "token"): TokenCheck {
    const client = this.clients.get(peer) ?? { failures: 0, until: 0 };
    const waitMs = client.until - this.clock();
    if (waitMs > 0) {
      this.counts.slowed++;
      return Math.ceil(waitMs / 1000);
    }
    const expected = as === "token" ? this.token : this.cookie;
    if (expected !== null && sameSecret(given, expected)) {
      this.clients.delete(peer);
      return "ok";
    }
    this.counts.failures++;
    client.failures++;
    const over = client.failures - TokenGate.FREE_FAILURES;
    const wait = over < 0 ? 0 : Math.min(1000 * 2 ** over, TokenGate.MAX_WAIT_MS);
    client.until = this.clock() + wait;
    this.clients.set(peer, client);
    this.options.onFailure?.({ peer, failures: client.failures, waitMs: wait });
    const said = `wrong tokens from ${peer} (${client.failures} so far): it now waits ${wait / 1000} s before each try (health: token.failures)`;
    if (wait > 0) this.alarm.fail("wrong tokens", (first) => `sessiontap: ${first ? "" : "still "}${said}`);
    return "wrong";
  }

  stats(): { failures: number; slowed: number; clients: number } {
    return { ...this.counts, clients: this.clients.size };
  }
}
