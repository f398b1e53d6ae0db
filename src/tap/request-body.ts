/**
 * A request body on its way upstream, with a copy for the mirror (docs/DESIGN.md "Request side"). A sized
 * body the mirror keeps is read first and handed to fetch as bytes, as nginx buffers a request: both
 * runtimes' fetch copy bytes before they return, so the same buffer then goes to the engine, and it was
 * the cheapest way measured (docs/RUNTIMES.md "Request bodies"). A chunked body streams through a
 * pass-through that keeps a copy. A body the mirror will not keep (larger than
 * SESSIONTAP_MAX_MESSAGE_BYTES, or not a Messages API call) goes upstream as the runtime's own stream,
 * copied by no JavaScript.
 */

import type { BodyCopy } from "../mirror/messages.ts";

/** A body ready for fetch, and its copy once fetch has taken it. */
export interface RelayedBody {
  body: BodyInit | null;
  /** Resolves once the body went upstream (call it after fetch() was called); never rejects. */
  copy(): Promise<BodyCopy>;
}

/**
 * Relays `request`'s body, keeping a copy of at most `maxBytes` for the mirror (negative: no copy at all).
 * A sized body up to `readFirstBytes` is read whole first; a larger one streams through the pass-through,
 * so that reading it costs the relay a little per chunk instead of several milliseconds at once, which
 * every other stream on the tap would feel (docs/BENCHMARKS.md, the gap scenario). Only where the runtime
 * keeps a streamed body's length (docs/RUNTIMES.md "Request bodies") may that bound be finite.
 */
export async function relayBody(request: Request, maxBytes: number, readFirstBytes: number): Promise<RelayedBody> {
  const source = request.body;
  if (source === null) return { body: null, copy: () => Promise.resolve({ skipped: "no request body" }) };
  if (maxBytes < 0) return { body: source, copy: () => Promise.resolve({ skipped: "not mirrored" }) };
  const declared = Number(request.headers.get("content-length") ?? NaN);
  const sized = Number.isFinite(declared) && declared >= 0;
  if (sized && declared > maxBytes) {
    return { body: source, copy: () => Promise.resolve({ skipped: `request body larger than SESSIONTAP_MAX_MESSAGE_BYTES (${declared} bytes)` }) };
  }
  if (sized && declared <= readFirstBytes) {
    // fetch copies bytes it is given before it returns: the buffer is the mirror's once fetch() was called.
    const bytes = new Uint8Array(await request.arrayBuffer());
    return { body: bytes, copy: () => Promise.resolve({ bytes }) };
  }
  return copyingStream(source, sized ? declared : null, maxBytes);
}

/** A pass-through stream that keeps a copy of what went through it, up to `maxBytes`. */
function copyingStream(source: ReadableStream<Uint8Array>, declared: number | null, maxBytes: number): RelayedBody {
  const reader = source.getReader();
  let buffer: Uint8Array | null = new Uint8Array(declared ?? 64 * 1024);
  let length = 0;
  let settle!: (copy: BodyCopy) => void;
  const copied = new Promise<BodyCopy>((resolve) => (settle = resolve));
  const keep = (chunk: Uint8Array) => {
    if (buffer === null) return;
    if (length + chunk.byteLength > maxBytes) {
      buffer = null;
      settle({ skipped: `request body larger than SESSIONTAP_MAX_MESSAGE_BYTES (more than ${maxBytes} bytes)` });
      return;
    }
    if (length + chunk.byteLength > buffer.byteLength) {
      const grown = new Uint8Array(Math.min(maxBytes, Math.max(buffer.byteLength * 2, length + chunk.byteLength)));
      grown.set(buffer.subarray(0, length));
      buffer = grown;
    }
    buffer.set(chunk, length);
    length += chunk.byteLength;
  };
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let result: Awaited<ReturnType<typeof reader.read>>;
        try {
          result = await reader.read();
        } catch (error) {
          settle({ skipped: "the request body could not be read" });
          controller.error(error);
          return;
        }
        if (result.done) {
          if (buffer !== null) settle({ bytes: length === buffer.byteLength ? buffer : buffer.slice(0, length) });
          controller.close();
          return;
        }
        keep(result.value);
        controller.enqueue(result.value);
      },
      cancel(reason) {
        settle({ skipped: "the request body was not sent whole" });
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return { body, copy: () => copied };
}
