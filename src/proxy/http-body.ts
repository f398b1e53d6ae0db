/**
 * A request body on a decrypted connection, framed as RFC 9112 §6 says: by Content-Length, by chunked
 * transfer coding (decoded here; the upstream gets the bytes, framed by its own fetch), or none. A sized
 * body up to a bound is read whole, so the request reaches the forwarder as base-URL mode's does on
 * every runtime — with its length, where a JavaScript stream would go upstream chunked on Deno
 * (docs/RUNTIMES.md "Request bodies"); anything else streams, read as the upstream takes it.
 */
import { field, type RequestHead } from "./http-head.ts";
import { latin1, type SocketReader } from "./socket-reader.ts";

/** How a request's body is framed, or a phrase saying why it cannot be read. */
export type Framing = { kind: "none" } | { kind: "sized"; length: number } | { kind: "chunked" };

/** The framing `head` declares; conflicting or unknown framing is refused (a request smuggled past a proxy starts that way). */
export function framingOf(head: RequestHead): Framing | string {
  const coding = field(head, "transfer-encoding");
  const length = field(head, "content-length");
  if (coding !== null) {
    if (length !== null) return "both Transfer-Encoding and Content-Length";
    return coding.trim().toLowerCase() === "chunked" ? { kind: "chunked" } : "a transfer coding other than chunked";
  }
  if (length === null) return { kind: "none" };
  const values = length.split(",").map((v) => v.trim());
  if (!values.every((v) => /^\d{1,15}$/.test(v)) || new Set(values).size !== 1) return "a Content-Length that is not one number";
  const n = Number(values[0]);
  return n === 0 ? { kind: "none" } : { kind: "sized", length: n };
}

/** Reads exactly `n` bytes (at most `ms` between chunks); throws when the connection ends first. */
export async function readExactly(reader: SocketReader, n: number, ms: number): Promise<Uint8Array> {
  const out = new Uint8Array(n);
  let at = 0;
  while (at < n) {
    const chunk = await reader.read(ms);
    if (chunk === null) throw new Error(`the request body ended after ${at} of ${n} bytes`);
    const take = Math.min(chunk.length, n - at);
    out.set(chunk.subarray(0, take), at);
    reader.unshift(chunk.subarray(take));
    at += take;
  }
  return out;
}

/** Reads one CRLF-ended line (at most `max` bytes) as text, without its CRLF. */
async function readLine(reader: SocketReader, max: number, ms: number): Promise<string> {
  let line = "";
  for (;;) {
    const chunk = await reader.read(ms);
    if (chunk === null) throw new Error("the request body ended inside a chunk");
    const lf = chunk.indexOf(10);
    const part = lf < 0 ? chunk : chunk.subarray(0, lf + 1);
    line += latin1(part);
    if (line.length > max) throw new Error("a chunk line is too long");
    if (lf >= 0) {
      reader.unshift(chunk.subarray(lf + 1));
      if (!line.endsWith("\r\n")) throw new Error("a chunk line does not end with CRLF");
      return line.slice(0, -2);
    }
  }
}

/**
 * The body as a stream, pulled as the upstream takes it; `done` is called once it was read to its end.
 * A body that breaks off errors the stream, which fails the upstream request.
 */
export function bodyStream(reader: SocketReader, framing: Framing & { kind: "sized" | "chunked" }, ms: number, done: () => void): ReadableStream<Uint8Array> {
  let left = framing.kind === "sized" ? framing.length : 0;
  let finished = false;
  const next = async (): Promise<Uint8Array | null> => {
    if (framing.kind === "sized") {
      if (left === 0) return null;
      const chunk = await reader.read(ms);
      if (chunk === null) throw new Error(`the request body ended ${left} bytes short`);
      const take = chunk.subarray(0, Math.min(chunk.length, left));
      reader.unshift(chunk.subarray(take.length));
      left -= take.length;
      return take;
    }
    if (left === 0) {
      if (finished) return null;
      const size = /^([0-9A-Fa-f]{1,12})(?:[ \t]*;.*)?$/.exec(await readLine(reader, 4096, ms));
      if (size === null) throw new Error("a chunk size is not hexadecimal");
      left = parseInt(size[1], 16);
      if (left === 0) {
        // Trailer fields, then the blank line that ends the message; trailers are not forwarded.
        while ((await readLine(reader, 8192, ms)) !== "");
        finished = true;
        return null;
      }
    }
    const chunk = await reader.read(ms);
    if (chunk === null) throw new Error("the request body ended inside a chunk");
    const take = chunk.subarray(0, Math.min(chunk.length, left));
    reader.unshift(chunk.subarray(take.length));
    left -= take.length;
    if (left === 0 && (await readLine(reader, 2, ms)) !== "") throw new Error("a chunk does not end with CRLF");
    return take;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk = await next();
      while (chunk !== null && chunk.length === 0) chunk = await next();
      if (chunk === null) {
        done();
        controller.close();
      } else controller.enqueue(chunk.slice());
    },
  }, { highWaterMark: 0 });
}
