/**
 * The tee: forwards each upstream chunk to the client as it arrives, while its observer (the relay's side
 * of the mirror) copies the same bytes to the engine. Not `ReadableStream.tee()`: that never cancels the
 * upstream when the client leaves and buffers the slower branch without limit
 * (docs/RUNTIMES.md "Client disconnect"). A pull source keeps the client's backpressure, passes a client
 * cancel to the upstream, and tells a client that left from an upstream that failed.
 *
 * Holding back (docs/DESIGN.md "Writes"): bytes that may be the final event wait until the engine says
 * the message is written, at most `holdBackMs` in all; a non-streaming answer's last chunk waits for its
 * end the same way. The observer never throws (relay-observer.ts is the error boundary).
 */
import type { CutBy, Verdict } from "../mirror/messages.ts";
import type { Hold } from "./relay-observer.ts";
import { orAfter } from "../utils/within.ts";

/** What the tee needs of its observer (src/tap/relay-observer.ts). */
export interface TeeObserver {
  /** Copies a chunk; says which of its bytes to hold back, when it may hold the final event. */
  chunk(chunk: Uint8Array): Hold | null;
  /** Asks again about bytes still held. */
  ask(): Promise<Verdict>;
  /** Null while the engine keeps up; else resolves when the tee may read on (memory stays bounded). */
  behind(): Promise<void> | null;
  /** True when the last chunk must wait for the end. */
  readonly holdsLastChunk: boolean;
  /** The body ended; with bytes held, the verdict to wait for. */
  end(holding: boolean): Promise<Verdict> | null;
  cut(by: CutBy): void;
  /** Held bytes went out before their write was done. */
  late(): void;
}

/** How the tee behaves around its observer. */
export interface TeeOptions {
  /** Longest time held bytes wait for their write (docs/DESIGN.md "Writes": default 250 ms). */
  holdBackMs: number;
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
export function teeBody(body: ReadableStream<Uint8Array>, observer: TeeObserver, options: TeeOptions): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  /** Bytes held back, in order, and when holding began (the bound is on the whole wait). */
  let held: Uint8Array[] = [];
  let heldSince = 0;

  /** Waits for a verdict within what is left of the bound; "late" when the bound ran out first. */
  const wait = async (verdict: Promise<Verdict>): Promise<Verdict | "late"> => {
    const left = heldSince + options.holdBackMs - Date.now();
    const outcome = left <= 0 ? "late" : await orAfter(verdict, left, "late" as const);
    if (outcome === "late") observer.late();
    return outcome;
  };
  const release = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    if (held.length === 0) return; // the common case, on every chunk: nothing to allocate
    for (const bytes of held) controller.enqueue(bytes);
    held = [];
  };
  const hold = (bytes: Uint8Array) => {
    if (held.length === 0) heldSince = Date.now();
    held.push(bytes);
  };

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // A pull that enqueues nothing is never called again (WHATWG streams), so a chunk that is only
        // held back must be followed by another read in this same pull.
        for (;;) {
          const behind = observer.behind();
          if (behind !== null) await behind;
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
            if (observer.holdsLastChunk) heldSince = Date.now(); // a non-streaming answer waits from its end
            const verdict = observer.end(held.length > 0);
            if (verdict !== null) await wait(verdict);
            release(controller);
            controller.close();
            return;
          }
          const chunk = result.value;
          if (held.length > 0 && !observer.holdsLastChunk) {
            // The final event had begun without ending: these bytes wait with it, and the engine is asked again.
            hold(chunk);
            // Asked once: a chunk that holds the marker (the rest of the final event) already asked.
            const found = observer.chunk(chunk);
            const verdict = await wait(found?.verdict ?? observer.ask());
            if (verdict === "pending") continue;
            release(controller);
            return;
          }
          const found = observer.chunk(chunk);
          if (found !== null) {
            if (found.from > 0) controller.enqueue(chunk.subarray(0, found.from));
            hold(chunk.subarray(found.from));
            const verdict = await wait(found.verdict);
            if (verdict === "pending") {
              if (found.from > 0) return;
              continue;
            }
            release(controller);
            return;
          }
          if (observer.holdsLastChunk) {
            // A non-streaming answer is only whole at its end: each chunk waits for the next, the last for the write.
            const previous = held;
            held = [];
            hold(chunk);
            for (const bytes of previous) controller.enqueue(bytes);
            if (previous.length > 0) return;
            continue;
          }
          release(controller);
          controller.enqueue(chunk);
          return;
        }
      },
      cancel(reason) {
        observer.cut("client");
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
