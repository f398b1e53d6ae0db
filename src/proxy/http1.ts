// HTTP/1.1 on the proxy's sockets (RFC 9112), by hand: Deno's node:http closes a kept-alive connection after each response
// (docs/RUNTIMES.md "The forward proxy").
import { Buffer } from "node:buffer";
import { isIPv4, isIPv6 } from "node:net";
import type { Duplex } from "node:stream";
import { isHostName } from "../config/proxy-settings.ts";
import { orAfter } from "../utils/alarm.ts";

export class ReadError extends Error {
  constructor(readonly reason: "too-large" | "cut" | "timeout", message: string) {
    super(message);
  }
}

/** A socket's bytes as a queue with a push-back; the socket pauses while a chunk waits, so TCP holds a fast client back. */
// Not Readable.unshift(): on Bun 1.4 and Deno 2.9 bytes pushed back after the client's FIN were never read again (measured).
export class SocketReader {
  private readonly queue: Uint8Array[] = [];
  private ended = false;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private readonly on: Record<string, (arg: Uint8Array & Error) => void> = {
    data: (chunk: Uint8Array) => {
      this.queue.push(chunk);
      this.socket.pause();
      this.wake?.();
    },
    end: () => void (this.ended = true, this.wake?.()),
    close: () => void (this.ended = true, this.wake?.()),
    error: (error: Error) => void (this.failure = error, this.wake?.()),
  };

  constructor(private readonly socket: Duplex) {
    for (const [event, listener] of Object.entries(this.on)) socket.on(event, listener);
  }

  async read(timeoutMs: number): Promise<Uint8Array | null> {
    while (this.queue.length === 0) {
      if (this.failure !== null) throw this.failure;
      if (this.ended) return null;
      this.socket.resume();
      const woke = await orAfter(new Promise<boolean>((resolve) => (this.wake = () => resolve(true))), timeoutMs, false);
      this.wake = null;
      if (!woke) throw new ReadError("timeout", `nothing came within ${timeoutMs} ms`);
    }
    return this.queue.shift()!;
  }

  unshift = (bytes: Uint8Array) => void (bytes.byteLength > 0 && this.queue.unshift(bytes));

  detach(): Uint8Array[] {
    for (const [event, listener] of Object.entries(this.on)) this.socket.off(event, listener);
    this.socket.pause();
    return this.queue.splice(0);
  }
}

/** One character per byte (TextDecoder's "latin1" is windows-1252). */
export const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");

export async function readHead(reader: SocketReader, maxBytes: number, firstMs: number, restMs: number): Promise<string | null> {
  let bytes = Buffer.alloc(0);
  let by = Date.now() + firstMs;
  for (;;) {
    const chunk = await reader.read(Math.max(0, by - Date.now())).catch((error) => {
      if (!(error instanceof ReadError)) throw error;
      throw new ReadError("timeout", bytes.length === 0 ? "no request came" : `the request head did not come whole within ${restMs} ms`);
    });
    if (bytes.length === 0) by = Date.now() + restMs;
    if (chunk === null && bytes.length === 0) return null;
    if (chunk === null) throw new ReadError("cut", "the connection ended inside a request head");
    bytes = Buffer.concat([bytes, chunk]);
    const blank = bytes.indexOf("\r\n\r\n", Math.max(0, bytes.length - chunk.length - 3));
    if ((blank < 0 ? bytes.length : blank + 4) > maxBytes) throw new ReadError("too-large", `the request head is larger than ${maxBytes} bytes`);
    if (blank >= 0) {
      reader.unshift(bytes.subarray(blank + 4));
      return bytes.toString("latin1", 0, blank + 4);
    }
  }
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A head read strictly (RFC 9112 §3, §5: nothing folded, names that are tokens, no control character), or what is wrong with it. */
export function parseRequestHead(text: string) {
  const lines = text.replace(/\r\n\r\n$/, "").split("\r\n");
  const m = /^(\S+) (\S+) HTTP\/(1\.[01])$/.exec(lines[0]);
  if (m === null || !TOKEN.test(m[1])) return "the request line is not METHOD TARGET HTTP/1.x";
  const fields: [string, string][] = [];
  for (const line of lines.slice(1)) {
    if (/^[ \t]/.test(line)) return "a header field is folded over two lines";
    const colon = line.indexOf(":");
    if (colon < 0 || !TOKEN.test(line.slice(0, colon))) return "a header line is not NAME: VALUE";
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
    if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(value)) return "a header value holds a control character";
    fields.push([line.slice(0, colon).toLowerCase(), value]);
  }
  return { method: m[1], target: m[2], version: m[3] as "1.0" | "1.1", fields };
}

export type RequestHead = Exclude<ReturnType<typeof parseRequestHead>, string>;

export function field(head: RequestHead, name: string): string | null {
  const values = head.fields.filter(([n]) => n === name).map(([, v]) => v);
  return values.length === 0 ? null : values.join(", ");
}

export function keepsAlive(head: RequestHead): boolean {
  const tokens = (field(head, "connection") ?? "").toLowerCase().split(",").map((t) => t.trim());
  return head.version === "1.1" ? !tokens.includes("close") : tokens.includes("keep-alive");
}

/** A CONNECT target `host:port` (a name, an IPv4 address or a bracketed IPv6 one: RFC 9110 §9.3.6); null when it is not one. */
export function parseAuthority(target: string): { host: string; port: number } | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+):(\d{1,5})$/.exec(target);
  const port = Number(m?.[2]);
  if (m === null || port < 1 || port > 65535) return null;
  const raw = m[1].toLowerCase();
  const host = raw.startsWith("[") ? raw.slice(1, -1) : raw;
  return (raw.startsWith("[") ? isIPv6(host) : isHostName(host) || isIPv4(host)) ? { host, port } : null;
}

export type Framing = { kind: "none" } | { kind: "sized"; length: number } | { kind: "chunked" };

/** The framing a head declares (RFC 9112 §6), or why the request cannot be read: conflicting or unknown framing is how one is smuggled. */
export function framingOf(head: RequestHead): Framing | string {
  const coding = field(head, "transfer-encoding");
  const length = field(head, "content-length");
  const values = (length ?? "0").split(",").map((v) => v.trim());
  if (!head.target.startsWith("/")) return "the request target is not a path";
  if (coding !== null && length !== null) return "the request has both Transfer-Encoding and Content-Length";
  if (coding !== null && coding.trim().toLowerCase() !== "chunked") return "the request has a transfer coding other than chunked";
  if (!values.every((v) => /^\d{1,15}$/.test(v)) || new Set(values).size !== 1) return "the request has a Content-Length that is not one number";
  const framing: Framing = coding !== null ? { kind: "chunked" } : Number(values[0]) === 0 ? { kind: "none" } : { kind: "sized", length: Number(values[0]) };
  return framing.kind !== "none" && /^(GET|HEAD)$/.test(head.method) ? `a ${head.method} request with a body` : framing;
}

async function take(reader: SocketReader, n: number, ms: number): Promise<Uint8Array> {
  const chunk = await reader.read(ms);
  if (chunk === null) throw new Error(`the request body ended ${n === Number.POSITIVE_INFINITY ? "inside a chunk" : `${n} bytes short`}`);
  reader.unshift(chunk.subarray(n));
  return chunk.subarray(0, n);
}

async function readLine(reader: SocketReader, max: number, ms: number): Promise<string> {
  let line = "";
  for (;;) {
    const chunk = await take(reader, Number.POSITIVE_INFINITY, ms);
    const lf = chunk.indexOf(10);
    line += latin1(lf < 0 ? chunk : chunk.subarray(0, lf + 1));
    if (line.length > max) throw new Error("a chunk line is too long");
    if (lf < 0) continue;
    reader.unshift(chunk.subarray(lf + 1));
    if (!line.endsWith("\r\n")) throw new Error("a chunk line does not end with CRLF");
    return line.slice(0, -2);
  }
}

/** The body as a stream pulled as the upstream takes it; `done` once it was read to its end. A body cut short errors it. */
export function bodyStream(reader: SocketReader, framing: Framing & { kind: "sized" | "chunked" }, ms: number, done: () => void): ReadableStream<Uint8Array> {
  let left = framing.kind === "sized" ? framing.length : 0;
  const next = async (): Promise<Uint8Array | null> => {
    if (left === 0) {
      if (framing.kind === "sized") return null;
      const size = /^([0-9A-Fa-f]{1,12})(?:[ \t]*;.*)?$/.exec(await readLine(reader, 4096, ms));
      if (size === null) throw new Error("a chunk size is not hexadecimal");
      left = parseInt(size[1], 16);
      if (left === 0) {
        while ((await readLine(reader, 8192, ms)) !== ""); // trailer fields are not forwarded
        return null;
      }
    }
    const part = await take(reader, left, ms);
    left -= part.length;
    if (left === 0 && framing.kind === "chunked" && (await readLine(reader, 2, ms)) !== "") throw new Error("a chunk does not end with CRLF");
    return part;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const chunk = await next();
      if (chunk !== null) return controller.enqueue(chunk.slice());
      done();
      controller.close();
    },
  }, { highWaterMark: 0 });
}

export function writeTo(socket: Duplex, bytes: Uint8Array | string): Promise<boolean> {
  if (socket.destroyed || !socket.writable) return Promise.resolve(false);
  return new Promise((resolve) => {
    if (socket.write(bytes)) return resolve(true);
    const settle = (alive: boolean) => () => {
      socket.off("drain", onDrain).off("close", onClose);
      resolve(alive);
    };
    const [onDrain, onClose] = [settle(true), settle(false)];
    socket.on("drain", onDrain).on("close", onClose);
  });
}

/** Writes a forwarded answer, each chunk the moment it comes; a slow client holds the upstream back (each write awaits its drain). */
export async function writeResponse(socket: Duplex, response: Response, isHead: boolean, close: boolean): Promise<"done" | "client-gone" | "body-failed"> {
  const lines = [`HTTP/1.1 ${response.status} ${response.statusText}`]; // a reason phrase may be empty (RFC 9112 §4)
  for (const [name, value] of response.headers) {
    if (!["set-cookie", "content-length", "transfer-encoding", "connection"].includes(name)) lines.push(`${name}: ${value}`);
  }
  for (const cookie of response.headers.getSetCookie()) lines.push(`set-cookie: ${cookie}`);
  const length = response.headers.get("content-length");
  const noBody = response.status === 204 || response.status === 304;
  const bodiless = isHead || noBody || response.status < 200;
  const chunked = !bodiless && response.body !== null && length === null;
  if (length !== null && !noBody) lines.push(`content-length: ${length}`);
  else if (chunked) lines.push("transfer-encoding: chunked");
  else if (!bodiless) lines.push("content-length: 0");
  if (close) lines.push("connection: close");
  const sent = await writeTo(socket, lines.join("\r\n") + "\r\n\r\n");
  if (!sent || bodiless || response.body === null) {
    await response.body?.cancel().catch(() => undefined);
    return sent ? "done" : "client-gone";
  }
  const reader = response.body.getReader();
  for (;;) {
    const result = await reader.read().catch(() => null);
    if (result === null) return "body-failed";
    if (result.done) break;
    // One chunk of chunked coding in one write, so one TLS record per event.
    const bytes = chunked ? Buffer.concat([Buffer.from(`${result.value.length.toString(16)}\r\n`), result.value, Buffer.from("\r\n")]) : result.value;
    if (result.value.length > 0 && !(await writeTo(socket, bytes))) {
      await reader.cancel().catch(() => undefined);
      return "client-gone";
    }
  }
  return !chunked || (await writeTo(socket, "0\r\n\r\n")) ? "done" : "client-gone";
}
