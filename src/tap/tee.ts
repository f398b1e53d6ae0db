// Hands each upstream chunk to the client and the same bytes to the observer (docs/DESIGN.md "Passthrough"): a pull source, as
// Hono's utils/stream.ts, since `ReadableStream.tee()` never cancels the upstream when the client leaves and buffers without limit.
import type { RelayObserver } from "./engine-link.ts";

export interface TeeOptions {
  /** Tells a client that left from an upstream that failed, when a read fails. */
  clientGone: () => boolean;
  upstreamBroke?: (error: unknown) => void;
  /** No reason on the cut: a runtime prints a body's error, and the upstream's break was reported already (RUNTIMES.md "A cut stream"). */
  cutQuietly?: boolean;
}

export function teeBody(body: ReadableStream<Uint8Array>, observer: RelayObserver, options: TeeOptions): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let result: Awaited<ReturnType<typeof reader.read>>;
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
