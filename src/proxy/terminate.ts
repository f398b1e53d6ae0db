// A known host's TLS terminated inside its CONNECT, and the requests on it handed to base-URL mode's forwarder with the
// host's upstream, so the mirror sees what it sees in base-URL mode (docs/DESIGN.md "Proxy mode").
import type { Socket } from "node:net";
import { Duplex } from "node:stream";
import { type SecureContext, TLSSocket } from "node:tls";
import type { Provider } from "../config/proxy-settings.ts";
import { describe } from "../utils/describe-error.ts";
import { bodyStream, field, framingOf, HeadError, keepsAlive, latin1, parseRequestHead, plainAnswer, readHead } from "./http1.ts";
import { ReadTimeout, SocketReader, writeResponse, writeTo } from "./http1.ts";

const MAX_HEAD = 64 * 1024;

export interface Destination {
  /** Decrypted on port 443 only. */
  host: string;
  provider: Provider;
  /** The real host over TLS, or what SESSIONTAP_PROXY_UPSTREAM names. */
  upstream: string;
}

export interface TerminateDeps {
  context(host: string): Promise<SecureContext>;
  forward(request: Request, upstream: string): Promise<Response>;
  stats: { failed(host: string, reason: string, detail?: string | null): void; terminated(): void; forwarded(provider: Provider): void };
  /** Longest wait for the handshake, and inside a request once it began. */
  timeoutMs: number;
  /** Longest quiet between requests. */
  idleMs: number;
  /** A sized body up to this is read whole, so it goes upstream with its length on every runtime (docs/RUNTIMES.md "Request bodies"). */
  readWholeBytes: number;
  /** Whether a request is in flight: a stopping proxy closes idle connections at once. */
  busy(yes: boolean): void;
  stopping(): boolean;
}

// OpenSSL, BoringSSL and rustls name a client's refusal of the certificate differently.
const REFUSED_CERTIFICATE = /unknown[ _]?ca|bad[ _]?certificate|certificate[ _]?unknown|unsupported[ _]?certificate|alert number 4[2356]/i;

class ClosedInHandshake extends Error {}

// On Deno a TLSSocket over a net.Socket takes its native handle and loses what JavaScript already read from it; a duplex
// between them keeps those bytes (docs/RUNTIMES.md "The forward proxy").
function bridge(socket: Socket, pending: Uint8Array[]): Duplex {
  const duplex = new Duplex({
    read: () => void socket.resume(),
    write: (chunk, _encoding, callback) => void socket.write(chunk, callback),
    final: (callback) => void socket.end(callback),
    destroy: (error, callback) => {
      socket.destroy();
      callback(error);
    },
  });
  for (const bytes of pending) duplex.push(bytes);
  socket.on("data", (chunk: Uint8Array) => duplex.push(chunk) || socket.pause());
  socket.on("end", () => duplex.push(null)).on("close", () => duplex.destroy()).on("error", (error) => duplex.destroy(error));
  socket.resume();
  return duplex;
}

function handshake(secure: TLSSocket, ms: number): Promise<"secure" | "timeout" | Error> {
  return new Promise((resolve) => {
    const finish = (outcome: "secure" | "timeout" | Error) => {
      clearTimeout(timer);
      secure.off("secure", onSecure).off("error", finish).off("close", onClose);
      resolve(outcome);
    };
    const timer = setTimeout(() => finish("timeout"), ms);
    const onSecure = () => finish("secure");
    const onClose = () => finish(new ClosedInHandshake("the client closed the connection during the handshake"));
    secure.on("secure", onSecure).on("error", finish).on("close", onClose);
  });
}

/** Terminates TLS on `socket` (its CONNECT answered, `reader` holding what came after) and serves its requests. */
export async function terminate(socket: Socket, reader: SocketReader, to: Destination, deps: TerminateDeps): Promise<void> {
  const { stats } = deps;
  const fail = (reason: string, detail: string | null = null) => {
    stats.failed(to.host, reason, detail);
    socket.destroy();
  };
  let first: Uint8Array | null;
  try {
    first = await reader.read(deps.timeoutMs);
  } catch (error) {
    return fail(error instanceof ReadTimeout ? "handshake-timeout" : "handshake-failed", describe(error));
  }
  if (first === null) return fail("no-handshake");
  // Every TLS connection opens with a handshake record (content type 22, RFC 8446 §5.1).
  if (first[0] !== 22) {
    const plain = /^[A-Z]{3,10} \S/.test(latin1(first.subarray(0, 24)));
    stats.failed(to.host, plain ? "plain-http" : "not-tls");
    if (!plain) return void socket.destroy();
    await writeTo(socket, plainAnswer(400, `the tunnel to ${to.host}:443 carries TLS, and the client sent plain HTTP in it (use an https:// URL)`));
    return void socket.end();
  }
  reader.unshift(first);
  let context;
  try {
    context = await deps.context(to.host);
  } catch (error) {
    return fail("certificate-error", describe(error));
  }
  const secure = new TLSSocket(bridge(socket, reader.detach()), { isServer: true, secureContext: context, ALPNProtocols: ["http/1.1"] });
  const outcome = await handshake(secure, deps.timeoutMs);
  // What follows a failed handshake was counted with it; a reset after one ends the request loop, which reads it as the end.
  secure.on("error", () => undefined);
  if (outcome !== "secure") {
    const detail = outcome === "timeout" ? null : describe(outcome);
    const reason = outcome === "timeout"
      ? "handshake-timeout"
      : outcome instanceof ClosedInHandshake
      ? "closed-in-handshake"
      : REFUSED_CERTIFICATE.test(`${(outcome as { code?: string }).code} ${outcome.message}`) // describe() words every TLS failure alike
      ? "certificate-refused"
      : "handshake-failed";
    return fail(reason, detail);
  }
  stats.terminated();
  await serveRequests(secure, to, deps);
}

async function serveRequests(socket: Duplex, to: Destination, deps: TerminateDeps): Promise<void> {
  const reader = new SocketReader(socket);
  const refuse = async (reason: string, status: number, message: string) => {
    deps.stats.failed(to.host, reason);
    await writeTo(socket, plainAnswer(status, message));
    socket.end();
  };
  const drop = (reason: string, detail: string) => {
    deps.stats.failed(to.host, reason, detail);
    socket.destroy();
  };
  for (;;) {
    deps.busy(false);
    if (deps.stopping()) return void socket.end();
    let text: string | null;
    try {
      text = await readHead(reader, MAX_HEAD, deps.idleMs, deps.timeoutMs);
    } catch (error) {
      if (!(error instanceof HeadError)) return void socket.destroy(); // the client reset it
      if (error.reason === "timeout" && error.message === "no request came") return void socket.end(); // kept alive long enough
      return refuse(`head-${error.reason}`, error.reason === "too-large" ? 431 : 400, error.message);
    }
    if (text === null) return void socket.end();
    deps.busy(true);
    const head = parseRequestHead(text);
    if (typeof head === "string") return refuse("bad-request", 400, head);
    if (!head.target.startsWith("/")) return refuse("bad-request", 400, "the request target is not a path");
    const framing = framingOf(head);
    if (typeof framing === "string") return refuse("bad-request", 400, `the request has ${framing}`);
    if ((head.method === "GET" || head.method === "HEAD") && framing.kind !== "none") return refuse("bad-request", 400, `a ${head.method} request with a body`);
    if (/^100-continue$/i.test(field(head, "expect") ?? "") && head.version === "1.1") await writeTo(socket, "HTTP/1.1 100 Continue\r\n\r\n");
    let bodyRead = framing.kind === "none";
    let body: Uint8Array | ReadableStream<Uint8Array> | null = null;
    if (framing.kind === "sized" && framing.length <= deps.readWholeBytes) {
      try {
        body = new Uint8Array(await new Response(bodyStream(reader, framing, deps.idleMs, () => {})).arrayBuffer());
      } catch (error) {
        return drop("body-cut", describe(error));
      }
      bodyRead = true;
    } else if (framing.kind !== "none") {
      body = bodyStream(reader, framing, deps.idleMs, () => (bodyRead = true));
    }
    // Registered before any write can find the socket gone: the forwarder then stops the upstream, and the mirror knows.
    const abort = new AbortController();
    const gone = () => abort.abort(new Error("the client closed the connection"));
    socket.once("close", gone);
    let request: Request;
    try {
      const init = { method: head.method, headers: new Headers(head.fields), body, signal: abort.signal, duplex: "half" };
      request = new Request(`https://${to.host}${head.target}`, init as RequestInit);
    } catch (error) {
      socket.off("close", gone);
      return refuse("bad-request", 400, `the request cannot be forwarded (${describe(error)})`);
    }
    deps.stats.forwarded(to.provider);
    let response: Response;
    try {
      response = await deps.forward(request, to.upstream);
    } catch (error) {
      socket.off("close", gone);
      return drop("forward-failed", describe(error));
    }
    const close = !keepsAlive(head) || deps.stopping() || !bodyRead;
    const written = await writeResponse(socket, response, head.method === "HEAD", close);
    socket.off("close", gone);
    // A body that failed is cut, so the client sees a broken answer, never a clean short one.
    if (written !== "done") return void socket.destroy();
    if (close || !bodyRead) return void socket.end();
  }
}
