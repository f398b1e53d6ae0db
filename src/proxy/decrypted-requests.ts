/**
 * The HTTP/1.1 requests on a terminated connection (docs/DESIGN.md "Proxy mode"): each one is parsed,
 * made a Web Request and handed to the same forwarder base-URL mode uses — with the host's upstream — so
 * the mirror sees exactly what it sees in base-URL mode; its Response is written back streaming. The
 * connection stays open between requests (Claude Code reuses it) until the client closes it, asks to,
 * goes quiet for `idleMs`, or something on it cannot be read, which is answered and counted.
 */
import type { Duplex } from "node:stream";
import { describe } from "../utils/describe-error.ts";
import { bodyStream, framingOf, readExactly } from "./http-body.ts";
import { field, keepsAlive, parseRequestHead } from "./http-head.ts";
import { plainAnswer, writeResponse, writeTo } from "./http-response.ts";
import type { Provider } from "./known-hosts.ts";
import type { ProxyStats } from "./proxy-stats.ts";
import { HeadError, readHead, SocketReader } from "./socket-reader.ts";

/** Largest request head read (Node's own default is 16 KiB). */
const MAX_HEAD = 64 * 1024;

/** A terminated tunnel's destination. */
export interface Destination {
  host: string;
  port: number;
  provider: Provider;
  /** Where its requests go: the real host over TLS, or the upstream a setting names. */
  upstream: string;
}

/** What the request loop needs. */
export interface RequestLoopDeps {
  forward(request: Request, upstream: string): Promise<Response>;
  stats: ProxyStats;
  /** Longest wait inside a request once it began. */
  timeoutMs: number;
  /** Longest quiet between requests before the connection is closed. */
  idleMs: number;
  /** A sized body up to this is read whole before it is forwarded. */
  readWholeBytes: number;
  /** Told whether a request is in flight (a stopping proxy closes idle connections at once). */
  busy(yes: boolean): void;
  /** True once the proxy is stopping: the connection closes after the response in flight. */
  stopping(): boolean;
}

/** Answers a request the loop cannot forward, counts it, and ends the connection. */
async function refuse(socket: Duplex, deps: RequestLoopDeps, host: string, reason: string, status: number, message: string): Promise<void> {
  deps.stats.failed(host, reason);
  await writeTo(socket, plainAnswer(status, message));
  socket.end();
}

/** Serves requests on `socket` (decrypted) until the connection is done. */
export async function serveRequests(socket: Duplex, to: Destination, deps: RequestLoopDeps): Promise<void> {
  const reader = new SocketReader(socket);
  const authority = to.port === 443 ? to.host : `${to.host}:${to.port}`;
  for (;;) {
    deps.busy(false);
    if (deps.stopping()) return void socket.end();
    let text: string | null;
    try {
      text = await readHead(reader, MAX_HEAD, deps.idleMs, deps.timeoutMs);
    } catch (error) {
      if (!(error instanceof HeadError)) return void socket.destroy(); // the client reset it
      if (error.reason === "timeout" && error.message === "no request came") return void socket.end(); // quiet: kept alive long enough
      const status = error.reason === "too-large" ? 431 : 400;
      return refuse(socket, deps, to.host, `head-${error.reason}`, status, error.message);
    }
    if (text === null) return void socket.end();
    deps.busy(true);
    const head = parseRequestHead(text);
    if (typeof head === "string") return refuse(socket, deps, to.host, "bad-request", 400, head);
    if (!head.target.startsWith("/")) return refuse(socket, deps, to.host, "bad-request", 400, "the request target is not a path");
    const framing = framingOf(head);
    if (typeof framing === "string") return refuse(socket, deps, to.host, "bad-request", 400, `the request has ${framing}`);
    if ((head.method === "GET" || head.method === "HEAD") && framing.kind !== "none") {
      return refuse(socket, deps, to.host, "bad-request", 400, `a ${head.method} request with a body`);
    }
    if (/^100-continue$/i.test(field(head, "expect") ?? "") && head.version === "1.1") await writeTo(socket, "HTTP/1.1 100 Continue\r\n\r\n");
    let bodyRead = framing.kind === "none";
    let body: Uint8Array | ReadableStream<Uint8Array> | null = null;
    if (framing.kind === "sized" && framing.length <= deps.readWholeBytes) {
      try {
        body = await readExactly(reader, framing.length, deps.idleMs);
      } catch (error) {
        deps.stats.failed(to.host, "body-cut", describe(error));
        return void socket.destroy();
      }
      bodyRead = true;
    } else if (framing.kind !== "none") {
      body = bodyStream(reader, framing, deps.idleMs, () => (bodyRead = true));
    }
    // The client hanging up aborts the request, so the forwarder stops the upstream and the mirror knows
    // the client left (docs/DESIGN.md "Passthrough"); registered before any write can find the socket gone.
    const abort = new AbortController();
    const gone = () => abort.abort(new Error("the client closed the connection"));
    socket.once("close", gone);
    let request: Request;
    try {
      const headers = new Headers();
      for (const [name, value] of head.fields) headers.append(name, value);
      request = new Request(`https://${authority}${head.target}`, { method: head.method, headers, body, signal: abort.signal, duplex: "half" } as RequestInit);
    } catch (error) {
      socket.off("close", gone);
      return refuse(socket, deps, to.host, "bad-request", 400, `the request cannot be forwarded (${describe(error)})`);
    }
    deps.stats.forwarded(to.provider);
    let response: Response;
    try {
      response = await deps.forward(request, to.upstream);
    } catch (error) {
      socket.off("close", gone);
      deps.stats.failed(to.host, "forward-failed", describe(error));
      return void socket.destroy();
    }
    const close = !keepsAlive(head) || deps.stopping() || !bodyRead;
    const written = await writeResponse(socket, response, head.method === "HEAD", close);
    socket.off("close", gone);
    // A body that failed is cut, so the client sees a broken answer, never a clean short one.
    if (written !== "done") return void socket.destroy();
    if (close || !bodyRead) return void socket.end();
  }
}
