/**
 * Reads a socket (node:net or node:tls) as a queue of byte chunks with a push-back, so the proxy can read
 * a head, hand what follows it to the next reader, and read a body exactly: the way HTTP/1.1 frames
 * messages on one connection. The socket is paused while a chunk waits unread, so a client that sends
 * faster than the upstream takes is held back by TCP, not by memory.
 */
import type { Duplex } from "node:stream";

/** Thrown by a read that waited longer than it may. */
export class ReadTimeout extends Error {
  override name = "ReadTimeout";
}

/** One socket's incoming bytes. */
export class SocketReader {
  private readonly queue: Uint8Array[] = [];
  private ended = false;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private readonly onData = (chunk: Uint8Array) => {
    this.queue.push(chunk);
    this.socket.pause();
    this.notify();
  };
  private readonly onEnd = () => {
    this.ended = true;
    this.notify();
  };
  private readonly onError = (error: Error) => {
    this.failure = error;
    this.notify();
  };

  constructor(private readonly socket: Duplex) {
    socket.on("data", this.onData);
    socket.on("end", this.onEnd);
    socket.on("close", this.onEnd);
    socket.on("error", this.onError);
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** The next chunk, or null once the peer has ended; rejects on a socket error or after `timeoutMs`. */
  async read(timeoutMs: number): Promise<Uint8Array | null> {
    while (this.queue.length === 0) {
      if (this.failure !== null) throw this.failure;
      if (this.ended) return null;
      this.socket.resume();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = await new Promise<boolean>((resolve) => {
        this.wake = () => resolve(false);
        timer = setTimeout(() => resolve(true), timeoutMs);
      });
      clearTimeout(timer);
      this.wake = null;
      if (timedOut) throw new ReadTimeout(`nothing came within ${timeoutMs} ms`);
    }
    return this.queue.shift()!;
  }

  /** Puts bytes back, to be read first. */
  unshift(bytes: Uint8Array): void {
    if (bytes.byteLength > 0) this.queue.unshift(bytes);
  }

  /** True when bytes are waiting unread. */
  get buffered(): boolean {
    return this.queue.length > 0;
  }

  /** Stops listening and returns what was read and not consumed (the socket stays paused). */
  detach(): Uint8Array[] {
    this.socket.off("data", this.onData);
    this.socket.off("end", this.onEnd);
    this.socket.off("close", this.onEnd);
    this.socket.off("error", this.onError);
    this.socket.pause();
    return this.queue.splice(0);
  }
}

/** The index just past the first CRLFCRLF in `bytes` from `from`, or -1. */
function headEnd(bytes: Uint8Array, from: number): number {
  for (let i = Math.max(0, from - 3); i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) return i + 4;
  }
  return -1;
}

/** Bytes as Latin-1 text, one character per byte (TextDecoder's "latin1" is windows-1252, which is not). */
export function latin1(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 8192) text += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return text;
}

/** Why a head could not be read. */
export class HeadError extends Error {
  constructor(readonly reason: "too-large" | "cut" | "timeout", message: string) {
    super(message);
  }
}

/**
 * Reads a message head (up to and with its blank line) as Latin-1 text, pushing back what follows it.
 * Null when the peer ended before sending a byte. `firstMs` bounds the wait for the first byte (a quiet
 * kept-alive connection), `restMs` each wait after it; `maxBytes` bounds the head.
 */
export async function readHead(reader: SocketReader, maxBytes: number, firstMs: number, restMs: number): Promise<string | null> {
  let bytes = new Uint8Array(0);
  for (;;) {
    let chunk: Uint8Array | null;
    try {
      chunk = await reader.read(bytes.length === 0 ? firstMs : restMs);
    } catch (error) {
      if (error instanceof ReadTimeout) throw new HeadError("timeout", bytes.length === 0 ? "no request came" : "the request head stopped part-way");
      throw error;
    }
    if (chunk === null) {
      if (bytes.length === 0) return null;
      throw new HeadError("cut", "the connection ended inside a request head");
    }
    const joined = new Uint8Array(bytes.length + chunk.length);
    joined.set(bytes);
    joined.set(chunk, bytes.length);
    const end = headEnd(joined, bytes.length);
    bytes = joined;
    if (end >= 0) {
      if (end > maxBytes) throw new HeadError("too-large", `the request head is larger than ${maxBytes} bytes`);
      reader.unshift(bytes.subarray(end));
      return latin1(bytes.subarray(0, end));
    }
    if (bytes.length > maxBytes) throw new HeadError("too-large", `the request head is larger than ${maxBytes} bytes`);
  }
}
