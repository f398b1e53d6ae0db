/**
 * Terminates the TLS a client opens inside a CONNECT to a known host (docs/DESIGN.md "Proxy mode"), with a
 * leaf the local CA signed for that host, then serves the decrypted requests. node:tls runs over a
 * JavaScript duplex fed by the accepted socket rather than over the socket itself: on Deno a TLSSocket
 * wrapped around a net.Socket takes the native handle and loses every byte JavaScript already read from
 * it (docs/RUNTIMES.md "The forward proxy"), and the proxy must read the CONNECT head and the first byte
 * of the handshake itself. The handshake is bounded; a client that sends plain HTTP, or nothing, gets an
 * answer or a close, and one events-log line.
 */
import type { Socket } from "node:net";
import { Duplex } from "node:stream";
import { TLSSocket } from "node:tls";
import { describe } from "../utils/describe-error.ts";
import { type Destination, type RequestLoopDeps, serveRequests } from "./decrypted-requests.ts";
import { plainAnswer, writeTo } from "./http-response.ts";
import type { LeafCache } from "./leaf-cache.ts";
import { latin1, ReadTimeout, type SocketReader } from "./socket-reader.ts";

/** What termination needs besides the request loop's own. */
export interface TerminateDeps extends RequestLoopDeps {
  leaves: LeafCache;
}

/** A TLS alert that says the client did not trust the certificate (OpenSSL, BoringSSL and rustls spell it differently). */
const REFUSED_CERTIFICATE = /unknown[ _]?ca|bad[ _]?certificate|certificate[ _]?unknown|unsupported[ _]?certificate|alert number 4[2356]/i;

/** The client hung up during the handshake (Bun's TLS, Claude Code's, does so when it does not trust the certificate, with no alert). */
class ClosedInHandshake extends Error {}

/** A duplex over `socket` that first yields `pending` (bytes already read from it). */
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
  socket.on("data", (chunk: Uint8Array) => {
    if (!duplex.push(chunk)) socket.pause();
  });
  socket.on("end", () => duplex.push(null));
  socket.on("close", () => duplex.destroy());
  socket.on("error", (error) => duplex.destroy(error));
  socket.resume();
  return duplex;
}

/** Waits for the handshake: "secure", "timeout", or the error that ended it. */
function handshake(secure: TLSSocket, ms: number): Promise<"secure" | "timeout" | Error> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish("timeout"), ms);
    const finish = (outcome: "secure" | "timeout" | Error) => {
      clearTimeout(timer);
      secure.off("secure", onSecure);
      secure.off("error", onError);
      secure.off("close", onClose);
      resolve(outcome);
    };
    const onSecure = () => finish("secure");
    const onError = (error: Error) => finish(error);
    const onClose = () => finish(new ClosedInHandshake("the client closed the connection during the handshake"));
    secure.on("secure", onSecure);
    secure.on("error", onError);
    secure.on("close", onClose);
  });
}

/** Terminates TLS on `socket` (the CONNECT answered, `reader` holding what came after) and serves its requests. */
export async function terminate(socket: Socket, reader: SocketReader, to: Destination, deps: TerminateDeps): Promise<void> {
  let first: Uint8Array | null;
  try {
    first = await reader.read(deps.timeoutMs);
  } catch (error) {
    deps.stats.failed(to.host, error instanceof ReadTimeout ? "handshake-timeout" : "handshake-failed", describe(error));
    return void socket.destroy();
  }
  if (first === null) {
    deps.stats.failed(to.host, "no-handshake");
    return void socket.destroy();
  }
  // Every TLS connection opens with a handshake record (content type 22, RFC 8446 §5.1).
  if (first[0] !== 22) {
    const plain = /^[A-Z]{3,10} \S/.test(latin1(first.subarray(0, 24)));
    deps.stats.failed(to.host, plain ? "plain-http" : "not-tls");
    if (!plain) return void socket.destroy();
    await writeTo(socket, plainAnswer(400, `the tunnel to ${to.host}:${to.port} carries TLS, and the client sent plain HTTP in it (use an https:// URL)`));
    return void socket.end();
  }
  reader.unshift(first);
  let context;
  try {
    context = await deps.leaves.contextFor(to.host);
  } catch (error) {
    deps.stats.failed(to.host, "certificate-error", describe(error));
    return void socket.destroy();
  }
  const secure = new TLSSocket(bridge(socket, reader.detach()), { isServer: true, secureContext: context, ALPNProtocols: ["http/1.1"] });
  const outcome = await handshake(secure, deps.timeoutMs);
  if (outcome !== "secure") {
    const detail = outcome === "timeout" ? null : describe(outcome);
    const reason = outcome === "timeout"
      ? "handshake-timeout"
      : outcome instanceof ClosedInHandshake
      ? "closed-in-handshake"
      : REFUSED_CERTIFICATE.test(detail ?? "")
      ? "certificate-refused"
      : "handshake-failed";
    deps.stats.failed(to.host, reason, detail);
    secure.on("error", () => undefined); // what follows a failed handshake has been counted
    return void secure.destroy();
  }
  deps.stats.terminated();
  secure.on("error", () => undefined); // a reset after the handshake ends the request loop, which reads it as the end
  await serveRequests(secure, to, deps);
}
