/**
 * Where the final event of a Messages API stream begins in a chunk, found without parsing (docs/DESIGN.md
 * "Off the relay path"): the relay holds back the bytes from there until the message is written. Pure.
 */

/**
 * Where the event holding the byte at `at` begins: just after the blank line before it (SSE separates
 * events by a blank line, per the HTML spec's event stream format), or 0 when it began in an earlier chunk.
 */
export function eventStartBefore(chunk: Uint8Array, at: number): number {
  for (let i = at - 1; i > 0; i--) {
    const lf = chunk[i] === 0x0a && (chunk[i - 1] === 0x0a || (chunk[i - 1] === 0x0d && i >= 2 && chunk[i - 2] === 0x0a));
    const cr = chunk[i] === 0x0d && chunk[i - 1] === 0x0d;
    if (lf || cr) return i + 1;
  }
  return 0;
}
