/**
 * The event-stream format (HTML Living Standard, "Parsing an event stream"), reduced to what the mirror
 * needs: each event's `data`, and whether an event has begun but not yet ended — a final event whose
 * blank line has not arrived is not an event yet, so the hold-back must keep waiting for it
 * (docs/DESIGN.md "Writes"). Pure; fed decoded text in chunks split anywhere, a `\r\n` across two
 * chunks included. Whole reads are cheaper than one call per event: lines are found with native
 * searches on the text.
 */

/** Splits a stream into events and hands each event's data to `onData`. */
export class SseLines {
  /** A line not yet ended. */
  private line = "";
  /** The data lines of the event being read. */
  private data: string[] = [];
  private dataChars = 0;
  /** The previous chunk ended in `\r`: a `\n` first in this one ends nothing more. */
  private afterCR = false;
  private started = false;
  /** A line of the event being read contained the watched word. */
  private watchedSeen = false;
  /** The event being read grew past the bound: its lines are passed over until it ends. */
  private dropping = false;
  /** While dropping: the current line has begun and not ended (so its end is not the blank line). */
  private midLine = false;

  constructor(
    private readonly onData: (data: string) => void,
    /** Largest event kept, in characters; a larger one is dropped whole and reported to `onDropped`. */
    private readonly maxEventChars: number,
    /** The word `pendingWatched` looks for in an event that has not ended. */
    private readonly watch = "message_stop",
    /** Told of each dropped event, with about how many characters it had when it was let go. */
    private readonly onDropped: (chars: number) => void = () => {},
  ) {}

  /** Feeds decoded text. */
  feed(text: string): void {
    let at = 0;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) at = 1; // a byte order mark is not part of the stream
    }
    if (this.afterCR && text.charCodeAt(at) === 0x0a) at++;
    this.afterCR = false;
    // The next \r is searched for again only once it is passed: most streams have none.
    let cr = text.indexOf("\r", at);
    while (at < text.length) {
      const lf = text.indexOf("\n", at);
      if (cr >= 0 && cr < at) cr = text.indexOf("\r", at);
      const end = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
      if (end < 0) {
        if (this.dropping) this.midLine = true; // at < text.length: something of the line came
        else {
          this.line += text.slice(at);
          if (this.line.length + this.dataChars > this.maxEventChars) this.drop(this.line.length, true);
        }
        return;
      }
      if (!this.dropping) this.take(this.line + text.slice(at, end));
      else if (!this.midLine && end === at) this.endDropped();
      else this.midLine = false;
      this.line = "";
      if (text.charCodeAt(end) === 0x0d) {
        if (end + 1 === text.length) this.afterCR = true;
        else if (text.charCodeAt(end + 1) === 0x0a) at = end + 2;
        else at = end + 1;
        if (this.afterCR) return;
      } else at = end + 1;
    }
  }

  /** The stream ended: an event whose blank line never came still counts (the client acted on it). */
  end(): void {
    if (this.dropping) return this.endDropped();
    if (this.line !== "") this.take(this.line);
    this.line = "";
    this.take("");
  }

  /** True when an event has begun and a line of it so far (or the line not yet ended) contains the watched word. */
  get pendingWatched(): boolean {
    return this.watchedSeen || this.line.includes(this.watch);
  }

  /**
   * Lets the event being read go: it grew past the bound (docs/RELIABILITY.md "Trust boundaries"). Its
   * lines are passed over until the blank line that ends it; `midLine` says the current line is unended.
   */
  private drop(chars: number, midLine: boolean): void {
    this.onDropped(this.dataChars + chars);
    this.dropping = true;
    this.midLine = midLine;
    this.data = [];
    this.dataChars = 0;
    this.line = "";
  }

  /** The dropped event ended: reading starts afresh with the next event. */
  private endDropped(): void {
    this.dropping = false;
    this.midLine = false;
    this.watchedSeen = false;
  }

  /** One complete line. */
  private take(line: string): void {
    if (line === "") {
      this.watchedSeen = false;
      if (this.data.length > 0) {
        const data = this.data.join("\n");
        this.data = [];
        this.dataChars = 0;
        this.onData(data);
      }
      return;
    }
    if (line.charCodeAt(0) === 0x3a) return; // a comment
    if (!this.watchedSeen && line.includes(this.watch)) this.watchedSeen = true;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== "data") return; // the event name is advisory: the payload's own type decides
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    this.dataChars += value.length + 1;
    if (this.dataChars > this.maxEventChars) return this.drop(0, false);
    this.data.push(value);
  }
}
