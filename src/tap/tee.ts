// Hands each upstream chunk to the client and the same bytes to the observer (docs/DESIGN.md "Passthrough"): a pull source, as
// Hono's utils/stream.ts, since `ReadableStream.tee()` never cancels the upstream when the client leaves and buffers without limit.
import type { CutBy } from "../mirror/messages.ts";

export interface TeeObserver {
  chunk(chunk: Uint8Array): void;
  end(): void;
  cut(by: CutBy): void;
}

export interface TeeOptions {
  /** Tells a client that left from an upstream that failed, when a read fails. */
  clientGone: () => boolean;
  upstreamBroke?: (error: unknown) => void;
  /** No reason on the cut: a runtime prints a body's error, and the upstream's break was reported already (RUNTIMES.md "A cut stream"). */
  cutQuietly?: boolean;
}

type Reader = { read(): Promise<ReadableStreamReadResult<Uint8Array>>; cancel(reason?: unknown): Promise<void> };

// Deno's fetch body is a byte stream whose default reader allocates 64 KiB per read (one read per HTTP chunk: a page fault per
// 4 KiB and a GC): one buffer per stream, read into by a BYOB reader, and the bytes read copied out (BENCHMARKS.md "Issue 28").
function reusingReader(body: ReadableStream<Uint8Array>): Reader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return body.getReader(); // not a byte stream (Bun's fetch body, which hands over large chunks anyway)
  }
  let buffer = new Uint8Array(16 * 1024);
  return {
    async read() {
      const result = await byob.read(buffer);
      if (result.done) return { done: true, value: undefined };
      buffer = new Uint8Array(result.value.buffer);
      return { done: false, value: result.value.slice() };
    },
    cancel: (reason) => byob.cancel(reason),
  };
}

export function teeBody(body: ReadableStream<Uint8Array>, observer: TeeObserver, options: TeeOptions): ReadableStream<Uint8Array> {
  const reader = reusingReader(body);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let result: ReadableStreamReadResult<Uint8Array>;
      try {
        result = await reader.read();
      } catch (error) {
        const by = options.clientGone() ? "client" : "upstream";
        if (by === "upstream") options.upstreamBroke?.(error);
        observer.cut(by);
        controller.error(options.cutQuietly ? undefined : error);
        return;
      }
      if (result.done) {
        observer.end();
        controller.close();
        return;
      }
      // Copied first, so anything asked of the engine after the client has these bytes comes after them.
      observer.chunk(result.value);
      controller.enqueue(result.value);
    },
    cancel(reason) {
      observer.cut("client");
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
