/**
 * Bytes → SSE events → the accumulated assistant message. Pure: a UTF-8 decoder that keeps a split
 * character across chunks, eventsource-parser (the event-stream format of the HTML Living Standard,
 * "Parsing an event stream", a chunk boundary anywhere), and the accumulator.
 */
import { createParser, type EventSourceMessage, type EventSourceParser, type ParseError } from "eventsource-parser";
import { StreamAccumulator } from "./sse-accumulator.ts";

/** The default bound on what one answer may hold in memory (SESSIONTAP_MAX_MESSAGE_BYTES). */
export const MAX_MESSAGE_CHARS = 32 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/**
 * Reads one response stream into an accumulator, chunk by chunk, holding at most about `maxChars` of it
 * (docs/RELIABILITY.md "Trust boundaries"): past that, content is counted and let go, and an event larger
 * than the bound is dropped whole, so an answer of any size costs bounded memory.
 */
export class SseMessageReader {
  readonly acc: StreamAccumulator;
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;
  /** The parser gave up on an event past the bound during the last feed. */
  private overflowed = false;
  /** The event past the bound is being passed over, up to the blank line that ends it. */
  private dropping = false;
  /** While dropping: the current line has begun and not ended (so its end is not the blank line). */
  private midLine = false;
  /** While dropping: the last text ended in a `\r`, so a `\n` first in the next one is the rest of a `\r\n`. */
  private skipLF = false;
  /** The last two characters fed (where the stream stands when the parser gives up); a stream starts a line. */
  private last = LF;
  private beforeLast = LF;

  constructor(private readonly maxChars = MAX_MESSAGE_CHARS) {
    this.acc = new StreamAccumulator(maxChars);
    this.parser = createParser({
      onEvent: (event) => this.event(event),
      onError: (error) => this.parseError(error),
      maxBufferSize: maxChars,
    });
  }

  get whole(): boolean {
    return this.acc.whole;
  }

  /** Feeds one chunk of bytes. */
  feed(chunk: Uint8Array): void {
    this.text(this.decoder.decode(chunk, { stream: true }));
  }

  /**
   * The stream ended. eventsource-parser hands over an event only at the blank line after it, and a whole
   * answer may end without one (docs/DESIGN.md "Writes": the client's SDK has acted on it), so the end is
   * fed as a blank line; a cut-off line then fails to parse and is counted, not kept.
   */
  end(): void {
    this.text(this.decoder.decode());
    this.text("\n\n");
  }

  private text(text: string): void {
    if (this.dropping) text = this.passOver(text);
    const n = text.length;
    if (n === 0) return;
    this.beforeLast = n >= 2 ? text.charCodeAt(n - 2) : this.last;
    this.last = text.charCodeAt(n - 1);
    this.parser.feed(text);
    if (this.overflowed) this.startDropping();
  }

  private event(event: EventSourceMessage): void {
    // The parser bounds what it holds between feeds; an event that came whole in one feed is bounded here.
    if (event.data.length > this.maxChars) this.acc.letGo(event.data.length);
    else this.acc.pushData(event.data);
  }

  private parseError(error: ParseError): void {
    if (error.type === "max-buffer-size-exceeded") this.overflowed = true;
  }

  /**
   * The parser let go of an event past the bound (docs/RELIABILITY.md "Trust boundaries") and stopped: it
   * starts afresh, and the rest of that event is passed over up to the blank line that ends it. Where the
   * stream stands is read from its last two characters: inside a line, or just after one.
   */
  private startDropping(): void {
    this.overflowed = false;
    this.acc.letGo(this.maxChars + 1);
    this.parser.reset();
    // The parser holds a last \r until it sees whether a \n follows: alone on its line, it was the blank line.
    if (this.last === CR && (this.beforeLast === CR || this.beforeLast === LF)) return;
    this.dropping = true;
    this.midLine = this.last !== LF && this.last !== CR;
    this.skipLF = this.last === CR;
  }

  /** Passes over the dropped event's text; returns what follows its blank line (nothing while it goes on). */
  private passOver(text: string): string {
    let at = this.skipLF && text.charCodeAt(0) === LF ? 1 : 0;
    this.skipLF = false;
    for (;;) {
      const lf = text.indexOf("\n", at);
      const cr = text.indexOf("\r", at);
      const end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
      if (end < 0) {
        if (at < text.length) this.midLine = true;
        return "";
      }
      const blank = !this.midLine && end === at;
      this.midLine = false;
      at = end + 1;
      if (text.charCodeAt(end) === CR) {
        if (at === text.length) this.skipLF = true; // a \n may follow in the next text
        else if (text.charCodeAt(at) === LF) at++;
      }
      if (blank) {
        // A \n that completes the blank line's \r\n reaches the fresh parser as an empty line: a no-op.
        this.dropping = false;
        this.skipLF = false;
        return text.slice(at);
      }
    }
  }
}
