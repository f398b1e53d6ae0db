/**
 * The tee: forwards each upstream chunk to the client as it arrives and hands the same bytes to a second
 * consumer (the mirror). Not `ReadableStream.tee()`: that never cancels the upstream when the client
 * leaves and buffers the slower branch without limit (docs/RUNTIMES.md "Client disconnect"). A pull source
 * keeps the client's backpressure, passes a client cancel to the upstream, and tells a client that left
 * from an upstream that failed.
 */
import { settlesWithin } from "../utils/within.ts";

/** The second consumer. Any method may throw or reject; the tee contains it. */
export interface StreamObserver {
  /** One chunk; a returned promise (the final event's write) may hold that chunk back, bounded. */
  feed(chunk: Uint8Array): Promise<unknown> | undefined | void;
  /**
   * When `feed` returned a promise: where in that chunk the final event begins. The bytes before it go
   * to the client at once; only the final event waits for the write (0 or absent: the whole chunk waits).
   */
  heldFrom?(): number;
  /** The body ended normally. */
  end(): Promise<unknown> | undefined | void;
  /** The body was cut: the client left, or the upstream failed. */
  abort(by: "client" | "upstream"): void;
  /**
   * True when the observer only knows the message is complete at the end of the body (a non-streaming
   * JSON answer): the tee then keeps the last chunk until `end()`'s write is done, bounded, so the client
   * does not read a complete body before it is on disk.
   */
  holdsLastChunk?(): boolean;
}

/** How the tee behaves around its observer. */
export interface TeeOptions {
  /** Longest time a chunk waits for the observer's write (docs/DESIGN.md "Writes": default 250 ms). */
  holdBackMs: number;
  /** Called once when the observer throws or rejects; the observer is then dropped for this body. */
  onObserverError: (error: unknown) => void;
  /** True when the client has gone (tells a client abort from an upstream failure when a read fails). */
  clientGone: () => boolean;
  /** Called when a held chunk went out before its write finished (the bound expired). */
  onLate?: () => void;
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
export function teeBody(body: ReadableStream<Uint8Array>, observer: StreamObserver | null, options: TeeOptions): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let watching = observer;
  let held: Uint8Array | null = null;

  /** Runs one observer call; a throw or a rejection drops the observer and is reported once. */
  const call = (fn: (o: StreamObserver) => Promise<unknown> | undefined | void): Promise<unknown> | undefined => {
    const current = watching;
    if (current === null) return undefined;
    const drop = (error: unknown) => {
      if (watching === current) {
        watching = null;
        options.onObserverError(error);
      }
    };
    try {
      const result = fn(current);
      if (result && typeof (result as Promise<unknown>).then === "function") {
        return (result as Promise<unknown>).then(undefined, drop);
      }
    } catch (error) {
      drop(error);
    }
    return undefined;
  };

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // A pull that enqueues nothing is never called again (WHATWG streams), so a chunk that is only
        // held back must be followed by another read in this same pull.
        for (;;) {
          let result: Awaited<ReturnType<typeof reader.read>>;
          try {
            result = await reader.read();
          } catch (error) {
            const by = options.clientGone() ? "client" : "upstream";
            if (by === "upstream") options.upstreamBroke?.(error);
            call((o) => o.abort(by));
            controller.error(options.cutQuietly ? undefined : error);
            return;
          }
          if (result.done) {
            const wait = call((o) => o.end());
            if (wait && !(await settlesWithin(wait, options.holdBackMs))) options.onLate?.();
            if (held !== null) controller.enqueue(held);
            controller.close();
            return;
          }
          const wait = call((o) => o.feed(result.value));
          let chunk = result.value;
          let sent = false;
          if (wait) {
            const from = Math.min(Math.max(watching?.heldFrom?.() ?? 0, 0), chunk.length);
            if (from > 0 && held === null) {
              controller.enqueue(chunk.subarray(0, from));
              chunk = chunk.subarray(from);
              sent = true;
            }
            if (!(await settlesWithin(wait, options.holdBackMs))) options.onLate?.();
          }
          if (held !== null) {
            controller.enqueue(held);
            held = null;
            sent = true;
          }
          if (watching?.holdsLastChunk?.() === true) held = chunk;
          else {
            controller.enqueue(chunk);
            sent = true;
          }
          if (sent) return;
        }
      },
      cancel(reason) {
        call((o) => o.abort("client"));
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
