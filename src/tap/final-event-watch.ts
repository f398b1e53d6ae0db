/**
 * On the relay thread, finds the bytes that may be the response's final event without parsing the
 * stream (docs/DESIGN.md "Off the relay path"): a native search for `message_stop`, also across the
 * boundary with the previous chunk. A match is only a candidate — the literal can appear inside an
 * answer's text — so the engine, which parses, says whether the message is whole; a false candidate
 * costs one round trip, never a byte. Nothing here allocates but one view per chunk.
 */
import { Buffer } from "node:buffer";
import { eventStartBefore } from "../protocol/final-event.ts";

const MARKER = Buffer.from("message_stop");
/** Bytes of the previous chunks a marker split across chunks can start in. */
const TAIL = MARKER.length - 1;

/** Watches one response's chunks for its final event. */
export class FinalEventWatch {
  /** The last TAIL bytes seen (the first `kept` of them are valid). */
  private readonly tail = Buffer.alloc(TAIL);
  private kept = 0;

  /**
   * Where in `chunk` the bytes to hold back begin (the final event's start, or 0 when it began in an
   * earlier chunk), or -1 when the chunk holds no candidate.
   */
  holdFrom(chunk: Uint8Array): number {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const at = bytes.lastIndexOf(MARKER);
    const found = at >= 0 ? eventStartBefore(chunk, at) : this.kept > 0 && this.acrossSeam(bytes) ? 0 : -1;
    this.keepTail(bytes);
    return found;
  }

  /** True when the marker starts in the kept tail and ends in `bytes`. */
  private acrossSeam(bytes: Buffer): boolean {
    for (let start = 0; start < this.kept; start++) {
      const inTail = this.kept - start;
      if (MARKER.length - inTail > bytes.length) continue;
      let j = 0;
      while (j < inTail && this.tail[start + j] === MARKER[j]) j++;
      if (j < inTail) continue;
      while (j < MARKER.length && bytes[j - inTail] === MARKER[j]) j++;
      if (j === MARKER.length) return true;
    }
    return false;
  }

  /** Keeps the last TAIL bytes of everything seen so far. */
  private keepTail(bytes: Buffer): void {
    if (bytes.length >= TAIL) {
      bytes.copy(this.tail, 0, bytes.length - TAIL);
      this.kept = TAIL;
      return;
    }
    const keep = Math.min(this.kept, TAIL - bytes.length);
    this.tail.copy(this.tail, 0, this.kept - keep, this.kept);
    bytes.copy(this.tail, keep);
    this.kept = keep + bytes.length;
  }
}
