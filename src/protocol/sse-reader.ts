/**
 * Bytes → SSE events → the accumulated assistant message. Pure: a UTF-8 decoder that keeps a split
 * character across chunks, the event-stream line splitter (which keeps a split line or event), and the
 * accumulator.
 */
import { SseLines } from "./sse-lines.ts";
import { StreamAccumulator } from "./sse-accumulator.ts";

/** The default bound on what one answer may hold in memory (SESSIONTAP_MAX_MESSAGE_BYTES). */
export const MAX_MESSAGE_CHARS = 32 * 1024 * 1024;

/**
 * Reads one response stream into an accumulator, chunk by chunk, holding at most about `maxChars` of it
 * (docs/RELIABILITY.md "Trust boundaries"): past that, content is counted and let go, and an event larger
 * than the bound is dropped whole, so an answer of any size costs bounded memory.
 */
export class SseMessageReader {
  readonly acc: StreamAccumulator;
  private readonly decoder = new TextDecoder();
  private readonly lines: SseLines;

  constructor(maxChars = MAX_MESSAGE_CHARS) {
    this.acc = new StreamAccumulator(maxChars);
    this.lines = new SseLines((data) => this.acc.pushData(data), maxChars, "message_stop", (chars) => this.acc.letGo(chars));
  }

  /** Feeds one chunk of bytes. */
  feed(chunk: Uint8Array): void {
    this.lines.feed(this.decoder.decode(chunk, { stream: true }));
  }

  /**
   * The stream ended: a last event without its blank line still counts (the client's SDK may have acted
   * on it); a cut-off line then fails to parse and is counted, not kept.
   */
  end(): void {
    this.lines.feed(this.decoder.decode());
    this.lines.end();
  }
}
