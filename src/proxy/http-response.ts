/**
 * Writes a forwarded Response on a decrypted connection as HTTP/1.1 (RFC 9112 §4, §6): the status line,
 * the headers the forwarder kept, and the body framed by its length or chunked, each chunk written the
 * moment it comes so an event stream reaches the client event by event. A client that writes more
 * slowly than the upstream sends holds the upstream back (each write waits for the socket to drain).
 */
import type { Duplex } from "node:stream";

/** Reason phrases of the statuses an API answers with; others go without one (RFC 9112 §4 allows it). */
const REASONS: Record<number, string> = {
  200: "OK",
  201: "Created",
  204: "No Content",
  304: "Not Modified",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  407: "Proxy Authentication Required",
  408: "Request Timeout",
  413: "Content Too Large",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  499: "Client Closed Request",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  529: "Overloaded",
};

/** The reason phrase for `status` ("" when none is known). */
export function reasonOf(status: number): string {
  return REASONS[status] ?? "";
}

/** Writes `bytes` and resolves once the socket took them or is gone (false then). */
export function writeTo(socket: Duplex, bytes: Uint8Array | string): Promise<boolean> {
  if (socket.destroyed || !socket.writable) return Promise.resolve(false);
  return new Promise((resolve) => {
    const ok = socket.write(bytes);
    if (ok) return resolve(true);
    const settle = (alive: boolean) => {
      socket.off("drain", onDrain);
      socket.off("close", onClose);
      resolve(alive);
    };
    const onDrain = () => settle(true);
    const onClose = () => settle(false);
    socket.on("drain", onDrain);
    socket.on("close", onClose);
  });
}

/** A short plain-text answer that ends the connection (the proxy's own refusals). */
export function plainAnswer(status: number, message: string, extra: Record<string, string> = {}): string {
  const body = `sessiontap: ${message}\n`;
  const headers = Object.entries({ "content-type": "text/plain; charset=utf-8", ...extra }).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  return `HTTP/1.1 ${status} ${reasonOf(status)}\r\n${headers}content-length: ${new TextEncoder().encode(body).length}\r\nconnection: close\r\n\r\n${body}`;
}

/** One chunk of chunked transfer coding, in one buffer (one write, so one TLS record, per event). */
function chunkOf(data: Uint8Array): Uint8Array {
  const size = new TextEncoder().encode(`${data.length.toString(16)}\r\n`);
  const out = new Uint8Array(size.length + data.length + 2);
  out.set(size);
  out.set(data, size.length);
  out.set([13, 10], size.length + data.length);
  return out;
}

/** How writing a response ended. */
export type Written = "done" | "client-gone" | "body-failed";

/** Statuses whose responses have no body (RFC 9110 §6.4.1). */
const NO_BODY = new Set([204, 304]);

/** Writes `response` to `socket`; `isHead`: the request was HEAD; `close`: say the connection ends after it. */
export async function writeResponse(socket: Duplex, response: Response, isHead: boolean, close: boolean): Promise<Written> {
  const lines = [`HTTP/1.1 ${response.status} ${response.statusText || reasonOf(response.status)}`];
  for (const [name, value] of response.headers) {
    if (name === "set-cookie" || name === "content-length" || name === "transfer-encoding" || name === "connection") continue;
    lines.push(`${name}: ${value}`);
  }
  for (const cookie of response.headers.getSetCookie()) lines.push(`set-cookie: ${cookie}`);
  const length = response.headers.get("content-length");
  const bodiless = isHead || NO_BODY.has(response.status) || response.status < 200;
  const chunked = !bodiless && response.body !== null && length === null;
  if (length !== null && (!NO_BODY.has(response.status))) lines.push(`content-length: ${length}`);
  else if (chunked) lines.push("transfer-encoding: chunked");
  else if (!bodiless) lines.push("content-length: 0");
  if (close) lines.push("connection: close");
  if (!(await writeTo(socket, lines.join("\r\n") + "\r\n\r\n"))) {
    await response.body?.cancel().catch(() => undefined);
    return "client-gone";
  }
  if (bodiless || response.body === null) {
    await response.body?.cancel().catch(() => undefined);
    return "done";
  }
  const reader = response.body.getReader();
  for (;;) {
    let result: Awaited<ReturnType<typeof reader.read>>;
    try {
      result = await reader.read();
    } catch {
      return "body-failed";
    }
    if (result.done) break;
    if (result.value.length === 0) continue;
    if (!(await writeTo(socket, chunked ? chunkOf(result.value) : result.value))) {
      await reader.cancel().catch(() => undefined);
      return "client-gone";
    }
  }
  if (chunked && !(await writeTo(socket, "0\r\n\r\n"))) return "client-gone";
  return "done";
}
