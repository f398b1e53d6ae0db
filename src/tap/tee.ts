/**
 * The tee: forwards each upstream chunk to the client as it arrives, while its observer (the relay's side
 * of the mirror) copies the same bytes to the engine. Not `ReadableStream.tee()`: that never cancels the
 * upstream when the client leaves and buffers the slower branch without limit
 * (docs/RUNTIMES.md "Client disconnect"). A pull source keeps the client's backpressure, passes a client
 * cancel to the upstream, and tells a client that left from an upstream that failed.
 *
 * The relay only posts (docs/DESIGN.md "Off the relay path"): no byte waits for the engine. The observer
 * never throws (relay-observer.ts is the error boundary).
 */
import type { RelayObserver } from "./relay-observer.ts";

/** How the tee behaves around its observer. */
export interface TeeOptions {
  /** True when the client has gone (tells a client abort from an upstream failure when a read fails). */
  clientGone: () => boolean;
  /** Called when reading the upstream failed while the client was still there. */
  upstreamBroke?: (error: unknown) => void;
  /**
   * Cut the client's stream with no reason attached: a server runtime prints the reason of a response
   * body that errors (Bun its stack, Deno through onError), and a break of the upstream is already
   * reported once, without a trace (docs/RUNTIMES.md "A cut stream").
   */
  cutQuietly?: boolean;
}

/** Returns the body the client reads; the observer sees the same chunks. */
export function teeBody(body: ReadableStream<Uint8Array>, observer: RelayObserver, options: TeeOptions): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
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
    },
    { highWaterMark: 0 },
  );
}
