/**
 * Where the final event of a Messages API stream begins in a chunk, found without parsing (docs/DESIGN.md
 * "Off the relay path"): the relay holds back the bytes from there until the message is written. Pure.
 */

const MESSAGE_STOP = new TextEncoder().encode("message_stop");

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

/**
 * The offset of the event holding the last `message_stop` in `chunk`, or 0 when that event began in an
 * earlier chunk (or the chunk does not hold the word).
 *
 * @example finalEventStart(bytes("event: ping\ndata: {}\n\nevent: message_stop\ndata: {}\n\n")) // → 22
 */
export function finalEventStart(chunk: Uint8Array): number {
  for (let i = chunk.length - MESSAGE_STOP.length; i >= 0; i--) {
    let j = 0;
    while (j < MESSAGE_STOP.length && chunk[i + j] === MESSAGE_STOP[j]) j++;
    if (j === MESSAGE_STOP.length) return eventStartBefore(chunk, i);
  }
  return 0;
}
