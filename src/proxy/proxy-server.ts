/**
 * The forward proxy (docs/DESIGN.md "Proxy mode"): a node:net listener on the tap's own address that
 * answers CONNECT. A host of the table (known-hosts.ts) has its TLS terminated and its requests forwarded
 * as base-URL mode forwards them, mirror included; any other host gets a blind tunnel. Bun.serve and
 * Deno.serve hand a server no CONNECT tunnel, so this listener is its own
 * (docs/RUNTIMES.md "The forward proxy"). With a token every CONNECT needs it in Proxy-Authorization.
 */
import { createServer, type Server, type Socket } from "node:net";
import type { ProxySettings } from "../config/proxy-settings.ts";
import { sameSecret } from "../server/request-guard.ts";
import type { EventFields } from "../storage/events-log.ts";
import { describe } from "../utils/describe-error.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { forward, type ForwardDeps } from "../tap/forward.ts";
import { settlesWithin } from "../utils/within.ts";
import { loadOrMakeCa, type StoredCa } from "./ca-store.ts";
import { field, parseAuthority, parseRequestHead } from "./http-head.ts";
import { plainAnswer, writeTo } from "./http-response.ts";
import { HostTable } from "./known-hosts.ts";
import { LeafCache } from "./leaf-cache.ts";
import { ProxyStartError } from "./proxy-error.ts";
import { type ProxyCounts, ProxyStats } from "./proxy-stats.ts";
import { ProxyUpstreams } from "./proxy-upstreams.ts";
import { HeadError, readHead, SocketReader } from "./socket-reader.ts";
import { terminate } from "./tls-terminate.ts";
import { ESTABLISHED, tunnel } from "./tunnel.ts";

/** Largest CONNECT head read. */
const MAX_CONNECT_HEAD = 16 * 1024;
/** Longest quiet on a terminated connection between requests (longer than clients keep an idle one). */
const IDLE_MS = 300_000;

/** What the proxy needs from the tap. */
export interface ProxyDeps {
  fs: FsAdapter;
  clock: () => number;
  stderr: (line: string) => void;
  /** The events log (through the mirror engine); a no-op with the mirror off. */
  log: (action: string, fields: EventFields) => void;
  /** The tap's forwarder settings; the proxy forwards with its own upstream per host. */
  forwardDeps: ForwardDeps;
  /** The address to listen on (the tap's). */
  host: string;
  /** The token every CONNECT needs, or null on loopback. */
  token: string | null;
}

/** What health shows of the proxy. */
export interface ProxyHealth extends ProxyCounts {
  port: number;
  ca: string;
  upstreams: Record<string, unknown>;
}

/** A proxy that is listening. */
export interface RunningProxy {
  port: number;
  /** Where the CA's certificate is (what NODE_EXTRA_CA_CERTS names), and whether this start made it. */
  ca: StoredCa;
  health(): ProxyHealth;
  /** Problems health lists (an upstream the proxy could not reach). */
  problems(): string[];
  /** Stops accepting; idle connections close at once, the rest within `drainMs`. */
  stop(drainMs: number): Promise<void>;
}

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
  const colon = decoded.indexOf(":");
  return colon >= 0 && sameSecret(decoded.slice(colon + 1), token);
}

/** Starts the proxy on `settings.port`; rejects (CaError, or the listen error) when it cannot. */
export async function startProxy(settings: Readonly<ProxySettings>, deps: ProxyDeps): Promise<RunningProxy> {
  const table = new HostTable(settings.addedHosts);
  for (const host of Object.keys(settings.upstreams)) {
    if (!table.terminates(host)) {
      throw new ProxyStartError(`SESSIONTAP_PROXY_UPSTREAM names ${host}, a host the proxy does not terminate (add it to SESSIONTAP_PROXY_HOSTS)`);
    }
  }
  const ca = await loadOrMakeCa(deps.fs, settings.caDir, table.names(), deps.clock()).catch((error) => {
    if (error instanceof ProxyStartError) throw error;
    throw new ProxyStartError(`the proxy's CA in ${settings.caDir} could not be read or made (${describe(error)})`);
  });
  const stats = new ProxyStats(deps.log, deps.stderr, deps.clock, ca.certPath);
  const upstreams = new ProxyUpstreams(deps.clock, deps.stderr, deps.log);
  const leaves = new LeafCache(ca.ca, deps.clock);
  const busy = new Map<Socket, boolean>();
  let stopping = false;
  /** Called once the last connection closed, while stopping. */
  let emptied = () => {};
  const readWholeBytes = Math.min(deps.forwardDeps.readFirstBytes, deps.forwardDeps.maxMessageBytes);
  const forwardTo = (request: Request, upstream: string) =>
    forward(request, { ...deps.forwardDeps, upstream, upstreamHealth: upstreams.reporter(upstream), proxied: true });

  /** Answers a proxy request with an error, counts and logs it, and closes. */
  const refuse = async (socket: Socket, reason: string, status: number, message: string, extra: Record<string, string> = {}) => {
    stats.refused(reason, status);
    await writeTo(socket, plainAnswer(status, message, extra));
    socket.end();
  };

  const handle = async (socket: Socket) => {
    socket.setNoDelay(true);
    const reader = new SocketReader(socket);
    let text: string | null;
    try {
      text = await readHead(reader, MAX_CONNECT_HEAD, settings.timeoutMs, settings.timeoutMs);
    } catch (error) {
      if (!(error instanceof HeadError)) return void socket.destroy();
      const status = error.reason === "too-large" ? 431 : error.reason === "timeout" ? 408 : 400;
      return refuse(socket, `head-${error.reason}`, status, error.message);
    }
    if (text === null) return void socket.destroy();
    const head = parseRequestHead(text);
    if (typeof head === "string") return refuse(socket, "bad-head", 400, head);
    if (head.method !== "CONNECT") {
      return refuse(socket, "not-connect", 405, "this is the tap's forward proxy: it answers CONNECT only (HTTPS_PROXY)", { allow: "CONNECT" });
    }
    if (deps.token !== null && !proxyAuthorized(field(head, "proxy-authorization"), deps.token)) {
      return refuse(socket, "unauthorized", 407, "this proxy needs the tap's token: HTTPS_PROXY=http://sessiontap:<TOKEN>@HOST:PORT", {
        "proxy-authenticate": 'Basic realm="sessiontap"',
      });
    }
    const target = parseAuthority(head.target);
    if (target === null) return refuse(socket, "bad-target", 400, "CONNECT takes host:port (a host name or address, and a port 1-65535)");
    const known = table.recognise(target.host);
    if (known.kind === "terminate") {
      if (!(await writeTo(socket, ESTABLISHED))) return void socket.destroy();
      const upstream = settings.upstreams[target.host] ?? `https://${target.port === 443 ? target.host : `${target.host}:${target.port}`}`;
      return terminate(socket, reader, { ...target, provider: known.provider, upstream }, {
        leaves,
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
    return tunnel(socket, reader, target.host, target.port, { stats, timeoutMs: settings.timeoutMs });
  };

  const server: Server = createServer((socket) => {
    busy.set(socket, true);
    socket.on("close", () => {
      busy.delete(socket);
      if (busy.size === 0) emptied();
    });
    socket.on("error", () => undefined); // every reader of the socket sees the error as an end
    handle(socket).catch((error) => {
      stats.internalError(describe(error));
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => reject(new ProxyStartError(`the proxy cannot listen on ${deps.host}:${settings.port} (${describe(error)})`));
    server.once("error", failed);
    server.listen({ port: settings.port, host: deps.host }, () => {
      server.off("error", failed);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  return {
    port,
    ca,
    health: () => ({ port, ca: ca.certPath, ...stats.snapshot(), upstreams: upstreams.states() }),
    problems: () => upstreams.problems(),
    async stop(drainMs) {
      stopping = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const [socket, inFlight] of busy) if (!inFlight) socket.destroy();
      const drained = busy.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => (emptied = resolve));
      if (!(await settlesWithin(drained, drainMs))) { for (const socket of busy.keys()) socket.destroy(); }
      await settlesWithin(closed, 1000);
    },
  };
}
