// The forward proxy (docs/DESIGN.md "Proxy mode"): a node:net listener of its own, since Bun.serve and Deno.serve hand no
// CONNECT to a server; a known host's TLS is terminated and its requests forwarded, any other host gets a blind tunnel.
import { lookup } from "node:dns/promises";
import { BlockList, connect, createServer, isIPv6, type Server, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { HostTable, type Provider, type ProxySettings, ProxyStartError } from "../config/proxy-settings.ts";
import { sameSecret } from "../server/request-guard.ts";
import type { TokenGate } from "../server/token-gate.ts";
import type { EventFields } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { forward, type ForwardDeps } from "../tap/forward.ts";
import { UpstreamHealth } from "../tap/upstream-health.ts";
import { REMIND_MS } from "../utils/alarm.ts";
import { describe } from "../utils/describe-error.ts";
import { upstreamProblems } from "../utils/upstream-problem.ts";
import { deadline, settlesWithin } from "../utils/within.ts";
import { field, HeadError, parseAuthority, parseRequestHead, plainAnswer, readHead, SocketReader, writeTo } from "./http1.ts";
import { leafContexts, loadOrMakeCa } from "./local-ca.ts";
import { terminate } from "./terminate.ts";

const MAX_CONNECT_HEAD = 16 * 1024;
const MAX_WAITING = 64;
/** Longer than clients keep an idle connection. */
const IDLE_MS = 300_000;
const ESTABLISHED = "HTTP/1.1 200 Connection Established\r\n\r\n";

export interface ProxyDeps {
  fs: FsAdapter;
  clock: () => number;
  stderr: (line: string) => void;
  /** The events log; a no-op with the mirror off. */
  log: (action: string, fields: EventFields) => void;
  /** The proxy forwards with its own upstream per host. */
  forwardDeps: ForwardDeps;
  /** The tap's address. */
  host: string;
  /** What every CONNECT needs, or null on loopback. */
  token: string | null;
  /** The tap's HTTP port (0 before it listens). */
  tapPort: () => number;
  /** The HTTP port's: one throttle and one count for a token however it comes. */
  tokenGate: TokenGate;
  onTokenFailure: (fields: { peer: string; failures: number; waitMs: number }) => void;
}

export type RunningProxy = Awaited<ReturnType<typeof startProxy>>;

/** True when `header` carries `token`, as Basic credentials (any user name) or a Bearer token. */
export function proxyAuthorized(header: string | null, token: string): boolean {
  const m = /^(Basic|Bearer)\s+(\S+)$/i.exec((header ?? "").trim());
  if (m === null) return false;
  if (m[1].toLowerCase() === "bearer") return sameSecret(m[2], token);
  let decoded = "";
  try {
    decoded = atob(m[2]);
  } catch {
    return false;
  }
  return decoded.includes(":") && sameSecret(decoded.slice(decoded.indexOf(":") + 1), token);
}

/** Counts for health, events-log lines, and the one stderr hint a refused certificate earns (at most once a minute). */
type Stats = ReturnType<typeof proxyStats>;

function proxyStats(deps: ProxyDeps, certPath: string) {
  const [refused, failed]: Record<string, number>[] = [{}, {}];
  // tunnels: blind, to hosts the proxy does not know; uncovered: shaped like a provider's host the CA does not cover, so tunnelled.
  const counts = { tunnels: 0, terminated: 0, forwarded: { anthropic: 0, vertex: 0, bedrock: 0 }, uncovered: 0, refused, failed, internalErrors: 0 };
  const uncoveredSeen = new Set<string>();
  let lastHint = Number.NEGATIVE_INFINITY;
  return {
    counts,
    refused(reason: string, status: number) {
      counts.refused[reason] = (counts.refused[reason] ?? 0) + 1;
      deps.log("proxy-refused", { reason, status });
    },
    failed(host: string, reason: string, detail: string | null = null) {
      counts.failed[reason] = (counts.failed[reason] ?? 0) + 1;
      deps.log("proxy-failed", { host, reason, ...(detail === null ? {} : { detail }) });
      // A client that refuses the certificate says so with an alert, or (Bun's TLS) just hangs up mid-handshake.
      if ((reason === "certificate-refused" || reason === "closed-in-handshake") && deps.clock() - lastHint >= REMIND_MS) {
        lastHint = deps.clock();
        const did = reason === "certificate-refused" ? "refused" : "hung up on";
        deps.stderr(
          `sessiontap: a client ${did} the proxy's certificate for ${host}, most likely because it does not trust the tap's CA: start it with NODE_EXTRA_CA_CERTS=${certPath}`,
        );
      }
    },
    internalError(error: string) {
      counts.internalErrors++;
      deps.log("proxy-error", { error });
      deps.stderr(`sessiontap: proxy: internal error on a connection (${error}); the connection was closed`);
    },
    uncovered(host: string, provider: Provider) {
      counts.uncovered++;
      if (uncoveredSeen.has(host) || uncoveredSeen.size >= 64) return;
      uncoveredSeen.add(host);
      deps.log("proxy-uncovered", { host, provider });
    },
    terminated: () => void counts.terminated++,
    forwarded: (provider: Provider) => void counts.forwarded[provider]++,
  };
}

/** Bytes flow both ways untouched once `address:port` answers; resolves once both sides are closed. */
function tunnel(client: Socket, reader: SocketReader, target: string, address: string, port: number, timeoutMs: number, stats: Stats): Promise<void> {
  return new Promise((resolve) => {
    const upstream = connect({ host: address, port });
    let open = false;
    let closed = 0;
    const timer = setTimeout(() => upstream.destroy(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
    upstream.once("connect", async () => {
      clearTimeout(timer);
      open = true;
      upstream.setNoDelay(true);
      if (!(await writeTo(client, ESTABLISHED))) return void upstream.destroy();
      stats.counts.tunnels++;
      for (const bytes of reader.detach()) upstream.write(bytes);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on("error", async (error) => {
      clearTimeout(timer);
      if (open) return void client.destroy();
      stats.refused("unreachable", 502);
      await writeTo(client, plainAnswer(502, `${target} could not be reached (${describe(error)})`));
      client.end(() => client.destroy());
    });
    client.on("error", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
    for (const side of [client, upstream]) side.on("close", () => ++closed === 2 && resolve());
    upstream.on("close", () => open && client.destroy());
  });
}

/** True when `address` is this machine's: a loopback or unspecified address, or one of its interfaces'. */
function isLocal(address: string): boolean {
  const local = new BlockList();
  local.addSubnet("127.0.0.0", 8, "ipv4");
  for (const a of ["0.0.0.0", "::", "::1", ...Object.values(networkInterfaces()).flat().map((i) => i?.address ?? "::")]) {
    local.addAddress(a, isIPv6(a) ? "ipv6" : "ipv4");
  }
  return local.check(address, isIPv6(address) ? "ipv6" : "ipv4");
}

/** Where what the proxy decrypts goes, and what becomes of other hosts: the startup block's words. */
function summary(settings: Readonly<ProxySettings>): string {
  const added = settings.addedHosts.length === 0 ? "" : `, and ${settings.addedHosts.join(", ")}`;
  const byUrl = new Map<string, string[]>();
  for (const [host, url] of Object.entries(settings.upstreams)) byUrl.set(url, [...byUrl.get(url) ?? [], host]);
  const routes = [...byUrl].map(([url, hosts]) => `${hosts.join(" and ")} to ${url}`).join(", ");
  const sends = routes === "" ? "sends each to itself" : `sends ${routes} (SESSIONTAP_PROXY_UPSTREAM), the others to their own hosts`;
  return `CONNECT: decrypts api.anthropic.com, Vertex AI and Bedrock hosts${added}; ${sends}; ${
    settings.tunnel ? "tunnels other hosts unread" : "refuses other hosts"
  }`;
}

/** Starts the proxy; rejects with a ProxyStartError when its CA, a setting or its port is not usable. */
export async function startProxy(settings: Readonly<ProxySettings>, deps: ProxyDeps) {
  const table = new HostTable(settings.addedHosts);
  for (const host of Object.keys(settings.upstreams)) {
    if (!table.terminates(host)) {
      throw new ProxyStartError(`SESSIONTAP_PROXY_UPSTREAM names ${host}, a host the proxy does not terminate (add it to SESSIONTAP_PROXY_HOSTS)`);
    }
  }
  const ca = await loadOrMakeCa(deps.fs, settings.caDir, table.names(), deps.clock()).catch((error) => {
    throw error instanceof ProxyStartError ? error : new ProxyStartError(`the proxy's CA in ${settings.caDir} could not be read or made (${describe(error)})`);
  });
  const stats = proxyStats(deps, ca.certPath);
  const upstreams = new Map<string, UpstreamHealth>();
  const reporter = (upstream: string): ForwardDeps["upstreamHealth"] => {
    const check = "Check the network, or SESSIONTAP_PROXY_UPSTREAM where it names the host";
    // One per host of the table (or its SESSIONTAP_PROXY_UPSTREAM), so bounded by it.
    const health = upstreams.get(upstream) ?? upstreams.set(upstream, new UpstreamHealth(upstream, deps.clock, deps.stderr, check)).get(upstream)!;
    return {
      failed: (error, how) => {
        health.failed(error, how);
        deps.log("upstream-error", { how, error: describe(error), upstream: new URL(upstream).host });
      },
      answered: () => health.answered(),
    };
  };
  const context = leafContexts(ca.ca, deps.clock);
  const busy = new Map<Socket, boolean>();
  let stopping = false;
  let emptied = () => {};
  const readWholeBytes = Math.min(deps.forwardDeps.readFirstBytes, deps.forwardDeps.maxMessageBytes);
  const forwardTo = (request: Request, upstream: string) =>
    forward(request, { ...deps.forwardDeps, upstream, upstreamHealth: reporter(upstream), proxied: true });

  const answer = async (socket: Socket, status: number, message: string, extra: Record<string, string> = {}) => {
    await writeTo(socket, plainAnswer(status, message, extra));
    socket.end(() => socket.destroy()); // a peer that never closes keeps no descriptor of the tap's
  };
  const refuse = (socket: Socket, reason: string, status: number, message: string, extra: Record<string, string> = {}) => {
    stats.refused(reason, status);
    return answer(socket, status, message, extra);
  };

  /** The CONNECT's target once its head was read and its token checked; null once refused. */
  const connectPhase = async (socket: Socket, reader: SocketReader) => {
    let text: string | null;
    try {
      text = await readHead(reader, MAX_CONNECT_HEAD, settings.timeoutMs, settings.timeoutMs);
    } catch (error) {
      if (!(error instanceof HeadError)) return void socket.destroy();
      return refuse(socket, `head-${error.reason}`, error.reason === "too-large" ? 431 : error.reason === "timeout" ? 408 : 400, error.message);
    }
    if (text === null) return void socket.destroy();
    const head = parseRequestHead(text);
    if (typeof head === "string") return refuse(socket, "bad-head", 400, head);
    if (head.method !== "CONNECT") {
      return refuse(socket, "not-connect", 405, "this is the tap's forward proxy: it answers CONNECT only (HTTPS_PROXY)", { allow: "CONNECT" });
    }
    if (deps.token !== null) {
      const given = field(head, "proxy-authorization");
      const peer = (socket.remoteAddress ?? "unknown").replace(/^::ffff:/, "");
      // While its client waits, a token is not read at all, as on the HTTP port.
      const wait = given === null ? 0 : Math.ceil(deps.tokenGate.waitMs(peer) / 1000);
      if (wait > 0) return answer(socket, 429, `too many wrong tokens from this client; try again in ${wait} s`, { "retry-after": String(wait) });
      if (!proxyAuthorized(given, deps.token)) {
        if (given === null) stats.refused("unauthorized", 407);
        else deps.onTokenFailure({ peer, ...deps.tokenGate.failed(peer) });
        return answer(socket, 407, "this proxy needs the tap's token: HTTPS_PROXY=http://sessiontap:<TOKEN>@HOST:PORT", {
          "proxy-authenticate": 'Basic realm="sessiontap"',
        });
      }
      deps.tokenGate.succeeded(peer);
    }
    return parseAuthority(head.target) ?? refuse(socket, "bad-target", 400, "CONNECT takes host:port (a host name or address, and a port 1-65535)");
  };

  let waiting = 0;
  const handle = async (socket: Socket) => {
    socket.setNoDelay(true);
    // Connections not yet past their CONNECT are capped, so however many a client opens, the tap keeps descriptors for its API.
    if (waiting >= MAX_WAITING) return refuse(socket, "busy", 503, `${MAX_WAITING} connections are still in their CONNECT phase: try again later`);
    const reader = new SocketReader(socket);
    waiting++;
    const target = await connectPhase(socket, reader).finally(() => waiting--);
    if (!target) return;
    // Only the API's own port is decrypted: every port as an upstream of its own would be one more health alarm each.
    const known = target.port === 443 ? table.recognise(target.host) : { kind: "unknown" as const };
    if (known.kind === "terminate") {
      if (!(await writeTo(socket, ESTABLISHED))) return void socket.destroy();
      const upstream = settings.upstreams[target.host] ?? `https://${target.host}`;
      return terminate(socket, reader, { ...target, provider: known.provider, upstream }, {
        context,
        stats,
        forward: forwardTo,
        timeoutMs: settings.timeoutMs,
        idleMs: IDLE_MS,
        readWholeBytes,
        // Only while open: a late word about a closed socket would keep a stop waiting for it.
        busy: (yes) => void (busy.has(socket) && busy.set(socket, yes)),
        stopping: () => stopping,
      });
    }
    if (known.kind === "uncovered") stats.uncovered(target.host, known.provider);
    if (!settings.tunnel) return refuse(socket, "tunnel-off", 403, "this proxy tunnels only the API hosts it knows (SESSIONTAP_PROXY_TUNNEL=off)");
    const name = `${target.host}:${target.port}`;
    let address: string;
    try {
      address = (await deadline(lookup(target.host), settings.timeoutMs, () => new Error(`no address within ${settings.timeoutMs} ms`))).address;
    } catch (error) {
      return refuse(socket, "unreachable", 502, `${name} could not be reached (${describe(error)})`);
    }
    // Into the tap's own ports, a tunnel would nest proxies without end, or reach /_tap/ from the tap's own address.
    if ((target.port === port || target.port === deps.tapPort()) && isLocal(address)) {
      return refuse(socket, "self", 403, `${name} leads into the tap itself: the proxy opens no tunnel there`);
    }
    return tunnel(socket, reader, name, address, target.port, settings.timeoutMs, stats);
  };

  const server: Server = createServer((socket) => {
    busy.set(socket, true);
    socket.on("close", () => busy.delete(socket) && busy.size === 0 && emptied());
    socket.on("error", () => undefined); // every reader of the socket sees the error as an end
    handle(socket).catch((error) => {
      stats.internalError(describe(error));
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => reject(new ProxyStartError(`the proxy cannot listen on ${deps.host}:${settings.port} (${describe(error)})`));
    server.once("error", failed).listen({ port: settings.port, host: deps.host }, () => resolve(void server.off("error", failed)));
  });
  const port = (server.address() as { port: number }).port;
  return {
    port,
    ca,
    summary: summary(settings),
    health: () => {
      const states = Object.fromEntries([...upstreams].map(([url, health]) => [url, health.state()]));
      return { port, ca: ca.certPath, ...structuredClone(stats.counts), upstreams: states, routes: settings.upstreams };
    },
    problems: () => [...upstreams.values()].flatMap((h) => upstreamProblems(h.state())),
    /** Idle connections close at once, the rest within `drainMs`. */
    async stop(drainMs: number) {
      stopping = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const [socket, inFlight] of busy) if (!inFlight) socket.destroy();
      const drained = busy.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => (emptied = resolve));
      if (!(await settlesWithin(drained, drainMs))) { for (const socket of busy.keys()) socket.destroy(); }
      await settlesWithin(closed, 1000);
    },
  };
}
