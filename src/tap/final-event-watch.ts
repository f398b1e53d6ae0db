/**
 * On the relay thread, finds the bytes that may be the response's final event without parsing the
 * stream (docs/DESIGN.md "Writes"): a native search for `message_stop`, also across the boundary with
 * the previous chunk. A match is only a candidate — the literal can appear inside an answer's text —
 * so the mirror, which parses, says whether the message is whole; a false candidate costs one round
 * trip, never a byte.
 */
import { Buffer } from "node:buffer";
import { finalEventStart } from "../protocol/sse-reader.ts";

const MARKER = Buffer.from("message_stop");

/** Watches one response's chunks for its final event. */
export class FinalEventWatch {
  private carry: Buffer = Buffer.alloc(0);

  /**
   * Where in `chunk` the bytes to hold back begin (the final event's start, or 0 when it began in an
   * earlier chunk), or -1 when the chunk holds no candidate.
   */
  holdFrom(chunk: Uint8Array): number {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let found = bytes.lastIndexOf(MARKER) >= 0 ? finalEventStart(chunk) : -1;
    if (found < 0 && this.carry.length > 0) {
      const seam = Buffer.concat([this.carry, bytes.subarray(0, MARKER.length - 1)]);
      if (seam.indexOf(MARKER) >= 0) found = 0;
    }
    const keep = Math.min(MARKER.length - 1, bytes.length);
    this.carry = Buffer.from(bytes.subarray(bytes.length - keep));
    return found;
  }
}
