// A client of a forward proxy, as Claude Code is one: CONNECT host:port, then TLS inside the tunnel (trusting
// only the CA it is given), then HTTP/1.1 by hand on that one connection, so a test can send several
// requests on it (keep-alive), read an answer chunk by chunk as it arrives, or send bytes no library would.
// node:net and node:tls only, so it behaves the same under Bun and Deno.
import { Buffer } from "node:buffer";
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect, type TLSSocket } from "node:tls";

/** Bytes arriving on a socket, read on demand. */
export class Incoming {
  private buffer = Buffer.alloc(0);
  private ended = false;
  private wake: (() => void) | null = null;

  constructor(readonly socket: Socket | TLSSocket) {
    socket.on("data", (c: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, c]);
      this.wake?.();
    });
    const end = () => {
      this.ended = true;
      this.wake?.();
    };
    socket.on("end", end);
    socket.on("close", end);
    socket.on("error", end);
  }

  /** Waits until `ready(buffer)` says how many bytes to take (-1: not yet); null when the socket ended first. */
  async take(ready: (b: Buffer) => number, ms = 10_000): Promise<Buffer | null> {
    const deadline = Date.now() + ms;
    for (;;) {
      const n = ready(this.buffer);
      if (n >= 0) {
        const out = this.buffer.subarray(0, n);
        this.buffer = this.buffer.subarray(n);
        return out;
      }
      if (this.ended) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`nothing more came within ${ms} ms (have ${JSON.stringify(this.buffer.toString("latin1").slice(0, 200))})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => (clearTimeout(timer), resolve());
      });
      this.wake = null;
    }
  }

  /** Everything until the peer closes. */
  async rest(ms = 10_000): Promise<Buffer> {
    return (await this.take(() => (this.ended ? this.buffer.length : -1), ms)) ?? Buffer.alloc(0);
  }

  /** True once the peer ended or the socket closed. */
  get closed(): boolean {
    return this.ended;
  }
}

/** A response read off the connection. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Reads one response head (status and lower-cased headers). */
export async function readResponseHead(incoming: Incoming, ms = 10_000): Promise<{ status: number; headers: Record<string, string> }> {
  const head = await incoming.take((b) => {
    const i = b.indexOf("\r\n\r\n");
    return i < 0 ? -1 : i + 4;
  }, ms);
  if (head === null) throw new Error("the connection closed before a response head");
  const [line, ...rest] = head.toString("latin1").trimEnd().split("\r\n");
  const headers: Record<string, string> = {};
  for (const l of rest) {
    const c = l.indexOf(":");
    headers[l.slice(0, c).toLowerCase()] = l.slice(c + 1).trim();
  }
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(line)?.[1] ?? 0), headers };
}

/** Reads one whole response; `onChunk` hears each body piece as it comes (a chunk of chunked coding). */
export async function readResponse(incoming: Incoming, onChunk: (bytes: Buffer) => void = () => {}, ms = 10_000): Promise<RawResponse> {
  const { status, headers } = await readResponseHead(incoming, ms);
  const parts: Buffer[] = [];
  if (headers["transfer-encoding"] === "chunked") {
    for (;;) {
      const sizeLine = await incoming.take((b) => {
        const i = b.indexOf("\r\n");
        return i < 0 ? -1 : i + 2;
      }, ms);
      if (sizeLine === null) throw new Error("the connection closed inside a chunked body");
      const size = parseInt(sizeLine.toString("latin1"), 16);
      const chunk = await incoming.take((b) => (b.length >= size + 2 ? size + 2 : -1), ms);
      if (chunk === null) throw new Error("the connection closed inside a chunk");
      if (size === 0) break;
      parts.push(chunk.subarray(0, size));
      onChunk(chunk.subarray(0, size));
    }
  } else if (headers["content-length"] !== undefined) {
    const n = Number(headers["content-length"]);
    const body = await incoming.take((b) => (b.length >= n ? n : -1), ms);
    if (body === null) throw new Error("the connection closed inside a body");
    parts.push(body);
  } else if (status !== 204 && status !== 304) {
    parts.push(await incoming.rest(ms));
  }
  return { status, headers, body: Buffer.concat(parts) };
}

/** Sends `CONNECT target` to the proxy and reads its answer; the socket is the tunnel when status is 200. */
export async function connectThrough(
  proxyPort: number,
  target: string,
  headers: Record<string, string> = {},
): Promise<{ socket: Socket; incoming: Incoming; status: number; headers: Record<string, string>; text: string }> {
  const socket = netConnect({ host: "127.0.0.1", port: proxyPort });
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  socket.setNoDelay(true);
  const incoming = new Incoming(socket);
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n${extra}\r\n`);
  const head = await readResponseHead(incoming);
  const text = head.status === 200 ? "" : (await incoming.rest()).toString("utf8");
  return { socket, incoming, ...head, text };
}

/** A TLS connection to `host:port` through the proxy, verified against `ca` only (as NODE_EXTRA_CA_CERTS makes Claude Code do). */
export async function tlsThrough(proxyPort: number, host: string, port: number, ca: string, headers: Record<string, string> = {}): Promise<TLSSocket> {
  const tunnel = await connectThrough(proxyPort, `${host}:${port}`, headers);
  if (tunnel.status !== 200) throw new Error(`CONNECT answered ${tunnel.status}: ${tunnel.text}`);
  tunnel.socket.removeAllListeners("data");
  tunnel.socket.pause();
  const name = /^[\d.]+$|:/.test(host) ? {} : { servername: host };
  const secure = tlsConnect({ socket: tunnel.socket, host, ...name, ca, ALPNProtocols: ["http/1.1"] });
  await new Promise<void>((resolve, reject) => secure.once("secureConnect", resolve).once("error", reject));
  return secure;
}

/** Writes one HTTP/1.1 request (sized body) on `socket`. */
export function sendRequest(socket: Socket | TLSSocket, method: string, path: string, headers: Record<string, string>, body = ""): void {
  const bytes = Buffer.from(body, "utf8");
  const lines = Object.entries({ host: "api.anthropic.com", ...headers, ...(body === "" ? {} : { "content-length": String(bytes.length) }) });
  socket.write(`${method} ${path} HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`);
  if (bytes.length > 0) socket.write(bytes);
}
