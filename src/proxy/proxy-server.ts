// The forward proxy (docs/DESIGN.md "Proxy mode"): node:net, since neither runtime's own server hands CONNECT to a handler.
import { Buffer } from "node:buffer";
import { lookup } from "node:dns/promises";
import { once } from "node:events";
import { BlockList, connect, createServer, isIPv6, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { Duplex } from "node:stream";
import { TLSSocket } from "node:tls";
import { hostTable, type Provider, ProxyStartError } from "../config/proxy-settings.ts";
import type { ProxySettings } from "../config/parse.ts";
import type { TokenGate } from "../server/request-guard.ts";
import type { EventFields } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { forward, type ForwardDeps } from "../tap/forward.ts";
import { Alarm, deadline, orAfter, settlesWithin } from "../utils/alarm.ts";
import { describe } from "../utils/describe-error.ts";
import { UpstreamHealth } from "../utils/upstream-health.ts";
import { bodyStream, field, framingOf, keepsAlive, latin1, parseAuthority, parseRequestHead, ReadError, readHead } from "./http1.ts";
import { SocketReader, writeResponse, writeTo } from "./http1.ts";
import { leafContexts, loadOrMakeCa } from "./local-ca.ts";

const [MAX_CONNECT_HEAD, MAX_HEAD] = [16 * 1024, 64 * 1024];
const MAX_WAITING = 64;
const IDLE_MS = 300_000; // longer than clients keep an idle connection
const ESTABLISHED = "HTTP/1.1 200 Connection Established\r\n\r\n";
const HEAD_STATUS = { "too-large": 431, timeout: 408, cut: 400 };
const ASK_TOKEN = "this proxy needs the tap's token: HTTPS_PROXY=http://sessiontap:<TOKEN>@HOST:PORT";
const CHALLENGE = { "proxy-authenticate": 'Basic realm="sessiontap"' };
// OpenSSL, BoringSSL and rustls name a client's refusal of the certificate differently.
const REFUSED_CERTIFICATE = /unknown[ _]?ca|bad[ _]?certificate|certificate[ _]?unknown|unsupported[ _]?certificate|alert number 4[2356]/i;

export interface ProxyDeps {
  fs: FsAdapter;
  stderr: (line: string) => void;
  log: (action: string, fields: EventFields) => void;
  forwardDeps: ForwardDeps;
  host: string;
  token: string | null;
  tapPort: () => number;
  tokenGate: TokenGate;
  owner?: (peer: { address: string; port: number }, port: number) => Promise<boolean | null>;
}

export type RunningProxy = Awaited<ReturnType<typeof startProxy>>;

export function proxyToken(header: string | null): string | null {
  const m = /^(Basic|Bearer)\s+(\S+)$/i.exec((header ?? "").trim());
  return (m === null ? undefined : /^bearer$/i.test(m[1]) ? m[2] : /^[^:]*:(.*)$/s.exec(Buffer.from(m[2], "base64").toString("latin1"))?.[1]) ?? null;
}

function isLocal(address: string): boolean {
  const local = new BlockList();
  local.addSubnet("127.0.0.0", 8, "ipv4");
  const own = ["0.0.0.0", "::", "::1", ...Object.values(networkInterfaces()).flat().map((i) => i?.address ?? "::")];
  for (const a of own) local.addAddress(a, isIPv6(a) ? "ipv6" : "ipv4");
  return local.check(address, isIPv6(address) ? "ipv6" : "ipv4");
}

function summary(settings: Readonly<ProxySettings>): string {
  const added = settings.addedHosts.length === 0 ? "" : `, and ${settings.addedHosts.join(", ")}`;
  const routes = Object.entries(settings.upstreams).map(([host, url]) => `${host} to ${url}`).join(", ");
  const sends = routes === "" ? "sends each to itself" : `sends ${routes} (SESSIONTAP_PROXY_UPSTREAM), the others to their own hosts`;
  const others = settings.tunnel ? "tunnels other hosts unread" : "refuses other hosts";
  return `CONNECT: decrypts api.anthropic.com, Vertex AI and Bedrock hosts${added}; ${sends}; ${others}`;
}

// On Deno a TLSSocket over a net.Socket loses what JavaScript already read from it (docs/RUNTIMES.md "The forward proxy").
function bridge(socket: Socket, pending: Uint8Array[]): Duplex {
  const duplex = new Duplex({
    read: () => void socket.resume(),
    write: (chunk, _encoding, callback) => void socket.write(chunk, callback),
    final: (callback) => void socket.end(callback),
    destroy: (error, callback) => (socket.destroy(), callback(error)),
  });
  for (const bytes of pending) duplex.push(bytes);
  socket.on("data", (chunk: Uint8Array) => duplex.push(chunk) || socket.pause());
  socket.on("end", () => duplex.push(null)).on("close", () => duplex.destroy()).on("error", (error) => duplex.destroy(error));
  socket.resume();
  return duplex;
}

type Failure = [reason: string, detail: string | null];

/** Null once the handshake is done, else a `proxy.failed` reason and its detail. */
function handshake(secure: TLSSocket, ms: number): Promise<Failure | null> {
  const outcome = new Promise<Failure | null>((resolve) => {
    const reason = (e: Error & { code?: string }) => REFUSED_CERTIFICATE.test(`${e.code} ${e.message}`) ? "certificate-refused" : "handshake-failed";
    secure.once("secure", () => resolve(null)).once("error", (e) => resolve([reason(e), describe(e)]));
    // Bun's TLS (Claude Code's) hangs up on a certificate it does not trust, without an alert.
    secure.once("close", () => resolve(["closed-in-handshake", "the client closed the connection during the handshake"]));
  });
  return orAfter(outcome, ms, ["handshake-timeout", null]);
}

export async function startProxy(settings: Readonly<ProxySettings>, deps: ProxyDeps) {
  const table = hostTable(settings.addedHosts);
  const named = Object.keys(settings.upstreams).find((host) => !table.terminates(host));
  if (named) throw new ProxyStartError(`SESSIONTAP_PROXY_UPSTREAM names ${named}, a host the proxy does not terminate (add it to SESSIONTAP_PROXY_HOSTS)`);
  const { clock } = deps.forwardDeps;
  const ca = await loadOrMakeCa(deps.fs, settings.caDir, table.names(), clock()).catch((error) => {
    throw error instanceof ProxyStartError ? error : new ProxyStartError(`the proxy's CA in ${settings.caDir} could not be read or made (${describe(error)})`);
  });
  const context = leafContexts(ca.ca, clock);
  const [refused, failures]: Record<string, number>[] = [{}, {}];
  const counts = { tunnels: 0, terminated: 0, forwarded: { anthropic: 0, vertex: 0, bedrock: 0 }, uncovered: 0, refused, failed: failures, internalErrors: 0 };
  const bump = (of: Record<string, number>, reason: string) => void (of[reason] = (of[reason] ?? 0) + 1);
  const uncoveredSeen = new Set<string>();
  const hint = new Alarm(clock, deps.stderr);
  const failed = (host: string, reason: string, detail: string | null = null) => {
    bump(counts.failed, reason);
    deps.log("proxy-failed", { host, reason, ...(detail === null ? {} : { detail }) });
    if (reason !== "certificate-refused" && reason !== "closed-in-handshake") return;
    const did = reason === "certificate-refused" ? "refused" : "hung up on";
    const line =
      `sessiontap: a client ${did} the proxy's certificate for ${host}, most likely because it does not trust the tap's CA: start it with NODE_EXTRA_CA_CERTS=${ca.certPath}`;
    hint.fail(reason, () => line);
  };
  const upstreams = new Map<string, UpstreamHealth>();
  const check = "Check the network, or SESSIONTAP_PROXY_UPSTREAM where it names the host";
  const reporter = (url: string) =>
    upstreams.get(url) ?? upstreams.set(url, new UpstreamHealth(url, clock, deps.stderr, (fields) => deps.log("upstream-error", fields), check)).get(url)!;
  const busy = new Map<Socket, boolean>();
  let stopping = false;

  const answer = async (socket: Duplex, status: number, message: string, extra: Record<string, string> = {}) => {
    const body = `sessiontap: ${message}\n`;
    const headers = { "content-type": "text/plain; charset=utf-8", ...extra, "content-length": String(Buffer.byteLength(body)) };
    await writeResponse(socket, new Response(body, { status, headers }), false, true);
    socket.end(() => socket.destroy());
  };
  const refuse = (socket: Socket, reason: string, status: number, message: string, extra: Record<string, string> = {}) => {
    bump(counts.refused, reason);
    deps.log("proxy-refused", { reason, status });
    return answer(socket, status, message, extra);
  };

  const connectPhase = async (socket: Socket, reader: SocketReader) => {
    const text = await readHead(reader, MAX_CONNECT_HEAD, settings.timeoutMs, settings.timeoutMs).catch((error: Error) => error);
    if (text === null || (text instanceof Error && !(text instanceof ReadError))) return void socket.destroy();
    if (text instanceof ReadError) return refuse(socket, `head-${text.reason}`, HEAD_STATUS[text.reason], text.message);
    const head = parseRequestHead(text);
    if (typeof head === "string") return refuse(socket, "bad-head", 400, head);
    if (head.method !== "CONNECT") {
      return refuse(socket, "not-connect", 405, "this is the tap's forward proxy: it answers CONNECT only (HTTPS_PROXY)", { allow: "CONNECT" });
    }
    if (deps.token !== null) {
      const given = field(head, "proxy-authorization");
      if (given === null) return refuse(socket, "unauthorized", 407, ASK_TOKEN, CHALLENGE);
      const checked = deps.tokenGate.check((socket.remoteAddress ?? "unknown").replace(/^::ffff:/, ""), proxyToken(given) ?? "");
      if (typeof checked === "number") {
        return answer(socket, 429, `too many wrong tokens from this client; try again in ${checked} s`, { "retry-after": String(checked) });
      }
      if (checked === "wrong") return answer(socket, 407, ASK_TOKEN, CHALLENGE);
    }
    return parseAuthority(head.target) ?? refuse(socket, "bad-target", 400, "CONNECT takes host:port (a host name or address, and a port 1-65535)");
  };

  const tunnel = (client: Socket, reader: SocketReader, target: string, address: string, port: number) => {
    const upstream = connect({ host: address, port });
    let open = false;
    const timer = setTimeout(() => upstream.destroy(new Error(`no connection within ${settings.timeoutMs} ms`)), settings.timeoutMs);
    upstream.once("connect", async () => {
      clearTimeout(timer);
      open = true;
      upstream.setNoDelay(true);
      if (!(await writeTo(client, ESTABLISHED))) return void upstream.destroy();
      counts.tunnels++;
      for (const bytes of reader.detach()) upstream.write(bytes);
      client.pipe(upstream).pipe(client);
      client.resume();
    });
    upstream.on("error", (error) => {
      clearTimeout(timer);
      if (open) return void client.destroy();
      void refuse(client, "unreachable", 502, `${target} could not be reached (${describe(error)})`);
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => open && client.destroy());
  };

  const terminate = async (socket: Socket, reader: SocketReader, host: string, provider: Provider) => {
    const fail = (reason: string, detail: string | null = null) => {
      failed(host, reason, detail);
      socket.destroy();
    };
    const first = await reader.read(settings.timeoutMs).catch((error: Error) => error);
    if (first instanceof Error) return fail(first instanceof ReadError ? "handshake-timeout" : "handshake-failed", describe(first));
    if (first === null) return fail("no-handshake");
    if (first[0] !== 22) { // a handshake record (RFC 8446 §5.1)
      if (!/^[A-Z]{3,10} \S/.test(latin1(first.subarray(0, 24)))) return fail("not-tls");
      failed(host, "plain-http");
      return answer(socket, 400, `the tunnel to ${host}:443 carries TLS, and the client sent plain HTTP in it (use an https:// URL)`);
    }
    reader.unshift(first);
    const secureContext = await context(host).catch((error: Error) => error);
    if (secureContext instanceof Error) return fail("certificate-error", describe(secureContext));
    const secure = new TLSSocket(bridge(socket, reader.detach()), { isServer: true, secureContext, ALPNProtocols: ["http/1.1"] });
    const failure = await handshake(secure, settings.timeoutMs);
    // A failed handshake was counted already; a reset later ends the request loop, which reads it as the end.
    secure.on("error", () => undefined);
    if (failure !== null) return fail(...failure);
    counts.terminated++;
    await serveRequests(secure, socket, host, provider);
  };

  const serveRequests = async (socket: Duplex, raw: Socket, host: string, provider: Provider) => {
    const reader = new SocketReader(socket);
    const upstream = settings.upstreams[host] ?? `https://${host}`;
    const inFlight = (yes: boolean) => void (busy.has(raw) && busy.set(raw, yes)); // only while open: a late word would keep a stop waiting
    // A sized body up to this is read whole, so it goes upstream with its length on every runtime (docs/RUNTIMES.md "Request bodies").
    const readWholeBytes = Math.min(deps.forwardDeps.readFirstBytes, deps.forwardDeps.maxMessageBytes);
    const reject = (reason: string, status: number, message: string) => (failed(host, reason), answer(socket, status, message));
    for (;;) {
      inFlight(false);
      if (stopping) return void socket.end();
      const text = await readHead(reader, MAX_HEAD, IDLE_MS, settings.timeoutMs).catch((error: Error) => error);
      if (text instanceof Error && !(text instanceof ReadError)) return void socket.destroy(); // the client reset it
      if (text === null || (text instanceof ReadError && text.message === "no request came")) return void socket.end();
      if (text instanceof ReadError) return reject(`head-${text.reason}`, HEAD_STATUS[text.reason], text.message);
      inFlight(true);
      const head = parseRequestHead(text);
      const framing = typeof head === "string" ? head : framingOf(head);
      if (typeof head === "string" || typeof framing === "string") return reject("bad-request", 400, String(framing));
      if (/^100-continue$/i.test(field(head, "expect") ?? "") && head.version === "1.1") await writeTo(socket, "HTTP/1.1 100 Continue\r\n\r\n");
      let bodyRead = framing.kind === "none";
      let body: BodyInit | null = framing.kind === "none" ? null : bodyStream(reader, framing, IDLE_MS, () => (bodyRead = true));
      if (framing.kind === "sized" && framing.length <= readWholeBytes) {
        const whole = await new Response(body).arrayBuffer().catch((error) => failed(host, "body-cut", describe(error)));
        if (whole === undefined) return void socket.destroy();
        body = new Uint8Array(whole);
      }
      // Registered before any write can find the socket gone, so the forwarder stops the upstream.
      const abort = new AbortController();
      const gone = () => abort.abort(new Error("the client closed the connection"));
      socket.once("close", gone);
      let request: Request;
      try {
        const init = { method: head.method, headers: new Headers(head.fields), body, signal: abort.signal, duplex: "half" };
        request = new Request(`https://${host}${head.target}`, init as RequestInit);
      } catch (error) {
        socket.off("close", gone);
        return reject("bad-request", 400, `the request cannot be forwarded (${describe(error)})`);
      }
      counts.forwarded[provider]++;
      const response = await forward(request, { ...deps.forwardDeps, upstream, upstreamHealth: reporter(upstream), proxied: true });
      const close = !keepsAlive(head) || stopping || !bodyRead;
      const written = await writeResponse(socket, response, head.method === "HEAD", close);
      socket.off("close", gone);
      if (written !== "done") return void socket.destroy();
      if (close) return void socket.end();
    }
  };

  let waiting = 0;
  const handle = async (socket: Socket) => {
    socket.setNoDelay(true);
    if (waiting >= MAX_WAITING) return refuse(socket, "busy", 503, `${MAX_WAITING} connections are still in their CONNECT phase: try again later`);
    const reader = new SocketReader(socket);
    waiting++;
    const target = await connectPhase(socket, reader).finally(() => waiting--);
    if (!target) return;
    const known = target.port === 443 ? table.recognise(target.host) : { kind: "unknown" as const };
    if (known.kind === "terminate") {
      if (!(await writeTo(socket, ESTABLISHED))) return void socket.destroy();
      return terminate(socket, reader, target.host, known.provider);
    }
    if (known.kind === "uncovered") counts.uncovered++;
    if (known.kind === "uncovered" && !uncoveredSeen.has(target.host) && uncoveredSeen.size < 64) {
      uncoveredSeen.add(target.host);
      deps.log("proxy-uncovered", { host: target.host, provider: known.provider });
    }
    if (!settings.tunnel) return refuse(socket, "tunnel-off", 403, "this proxy tunnels only the API hosts it knows (SESSIONTAP_PROXY_TUNNEL=off)");
    const name = `${target.host}:${target.port}`;
    const found = await deadline(lookup(target.host), settings.timeoutMs, () => new Error(`no address within ${settings.timeoutMs} ms`)).catch((e: Error) => e);
    if (found instanceof Error) return refuse(socket, "unreachable", 502, `${name} could not be reached (${describe(found)})`);
    const { address } = found;
    if ((target.port === port || target.port === deps.tapPort()) && isLocal(address)) {
      return refuse(socket, "self", 403, `${name} leads into the tap itself: the proxy opens no tunnel there`);
    }
    // Anything else on this machine would be reached as this user (another tap's viewer answers its owner by uid).
    const peer = { address: socket.remoteAddress ?? "", port: socket.remotePort ?? 0 };
    if (isLocal(address) && deps.token === null && (await deps.owner?.(peer, port)) !== true) {
      return refuse(socket, "local", 403, `${name} is on this machine: the proxy tunnels there only for its own user's clients`);
    }
    tunnel(socket, reader, name, address, target.port);
  };

  const server = createServer((socket) => {
    busy.set(socket, true);
    socket.on("close", () => busy.delete(socket));
    socket.on("error", () => undefined); // every reader of the socket sees the error as an end
    handle(socket).catch((error) => {
      counts.internalErrors++;
      deps.log("proxy-error", { error: describe(error) });
      deps.stderr(`sessiontap: proxy: internal error on a connection (${describe(error)}); the connection was closed`);
      socket.destroy();
    });
  });
  await once(server.listen({ port: settings.port, host: deps.host }), "listening").catch((error) => {
    throw new ProxyStartError(`the proxy cannot listen on ${deps.host}:${settings.port} (${describe(error)})`);
  });
  const port = (server.address() as { port: number }).port;
  return {
    port,
    ca,
    summary: summary(settings),
    health: () => {
      const states = Object.fromEntries([...upstreams].map(([url, health]) => [url, health.state()]));
      return { port, ca: ca.certPath, ...structuredClone(counts), upstreams: states, routes: settings.upstreams };
    },
    problems: () => [...upstreams.values()].flatMap((h) => h.problems()),
    async stop(drainMs: number) {
      stopping = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const [socket, inFlight] of busy) if (!inFlight) socket.destroy();
      if (!(await settlesWithin(closed, drainMs))) { for (const socket of busy.keys()) socket.destroy(); }
      await settlesWithin(closed, 1000);
    },
  };
}
