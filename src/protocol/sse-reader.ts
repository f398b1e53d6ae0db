/**
 * Bytes → SSE events → the accumulated assistant message. Pure: a UTF-8 decoder that keeps a split
 * character across chunks, eventsource-parser (which keeps a split line or event), and the accumulator.
 */
import { createParser, type EventSourceParser } from "eventsource-parser";
import { StreamAccumulator } from "./sse-accumulator.ts";

/** Largest event the reader buffers before giving up on the stream (eventsource-parser maxBufferSize). */
export const MAX_EVENT_CHARS = 64 * 1024 * 1024;

/** Reads one response stream into an accumulator, chunk by chunk. */
export class SseMessageReader {
  readonly acc = new StreamAccumulator();
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;

  constructor(maxEventChars = MAX_EVENT_CHARS) {
    this.parser = createParser({ onEvent: (event) => this.acc.pushData(event.data), maxBufferSize: maxEventChars });
  }

  /** Feeds one chunk of bytes; throws if an event grew past the bound. */
  feed(chunk: Uint8Array): void {
    this.parser.feed(this.decoder.decode(chunk, { stream: true }));
  }

  /** The stream ended: a last event without its blank line still counts. */
  end(): void {
    this.parser.feed(this.decoder.decode());
    this.parser.reset({ consume: true });
  }
}
