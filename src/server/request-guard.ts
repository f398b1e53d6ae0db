// Who may use the tap, from a request's headers and the kernel's table of sockets; pure (docs/DESIGN.md "Trust boundaries").
import { hostName } from "../viewer/hosts.ts";

export { sameSecret } from "./token-gate.ts";

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

/** An address as text to compare: IPv6 compressed in brackets, IPv4-mapped IPv6 as IPv4. */
function canonical(address: string): string {
  const bare = address.replace(/^\[|\]$/g, "").toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (mapped !== null) return mapped[1];
  return bare.includes(":") && URL.canParse(`http://[${bare}]`) ? new URL(`http://[${bare}]`).hostname : bare;
}

/** An address as /proc/net/tcp{,6} prints it: 32-bit words in the host's byte order, little-endian on every target the tap ships for. */
function procAddress(hex: string): string {
  const bytes = (hex.match(/.{8}/g) ?? []).flatMap((word) => (word.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16)));
  if (bytes.length === 4) return bytes.join(".");
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 255 && bytes[11] === 255) return bytes.slice(12).join(".");
  return canonical(Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] << 8) | bytes[2 * i + 1]).toString(16)).join(":"));
}

/** The uid of the one established row of /proc/net/tcp{,6} from `peer` to `port` on loopback: the client's socket; null: none or several. */
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
    const to = procAddress(remoteAddress);
    if (to.startsWith("127.") || to === "[::1]") uids.push(Number(uid));
  }
  return uids.length === 1 ? uids[0] : null;
}
