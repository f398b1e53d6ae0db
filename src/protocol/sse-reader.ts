// Bytes → SSE events (eventsource-parser: the HTML Living Standard's "Parsing an event stream") → the accumulated message. Pure.
import { createParser, type EventSourceMessage, type EventSourceParser, type ParseError } from "eventsource-parser";
import { StreamAccumulator } from "./sse-accumulator.ts";

/** SESSIONTAP_MAX_MESSAGE_BYTES's default. */
export const MAX_MESSAGE_CHARS = 32 * 1024 * 1024;

const LF = 0x0a;
const CR = 0x0d;

/** Holds at most about `maxChars` of one answer (docs/RELIABILITY.md "Trust boundaries"): an event past it is dropped whole. */
export class SseMessageReader {
  readonly acc: StreamAccumulator;
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;
  private overflowed = false;
  // Passing over an event past the bound, to its blank line: whether the current line has begun, and whether the last text ended
  // in a `\r` whose `\n` may come first in the next.
  private dropping = false;
  private midLine = false;
  private skipLF = false;
  /** The last two characters fed: where the stream stands when the parser gives up. */
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

  feed(chunk: Uint8Array): void {
    this.text(this.decoder.decode(chunk, { stream: true }));
  }

  // The parser hands an event over only at the blank line after it, and a whole answer may end without one (docs/DESIGN.md
  // "Writes"): the end is fed as one; a cut-off line then fails to parse and is counted, not kept.
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

  // eventsource-parser stops at its maxBufferSize and has no skip-over: it starts afresh, and the rest of that event is passed over
  // here, so an answer of any size costs bounded memory.
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
