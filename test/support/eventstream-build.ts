// Builds AWS event-stream frames as Bedrock sends them (binary messages with both CRC32s, made by AWS's own
// codec): `chunk` events carrying {"bytes": base64(event JSON)}, exceptions, and the broken frames a test
// needs (a wrong checksum, a wrong length, a stream cut inside a frame).
import { Buffer } from "node:buffer";
import { EventStreamCodec } from "@smithy/eventstream-codec";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const codec = new EventStreamCodec((b) => decoder.decode(b), (s) => encoder.encode(s));
const str = (value: string) => ({ type: "string" as const, value });

/** One `chunk` event frame carrying one Messages API event's JSON. */
export function chunkFrame(eventJson: string): Uint8Array {
  return chunkFrameOf(JSON.stringify({ bytes: Buffer.from(eventJson, "utf8").toString("base64"), p: "abcdefghijkl" }));
}

/** A `chunk` event frame whose payload is `payload` as it is (well framed, whatever it says). */
export function chunkFrameOf(payload: string): Uint8Array {
  const headers = { ":event-type": str("chunk"), ":content-type": str("application/json"), ":message-type": str("event") };
  return codec.encode({ headers, body: encoder.encode(payload) });
}

/** An exception frame, as Bedrock ends a stream it cannot finish (e.g. `throttlingException`). */
export function exceptionFrame(type: string, message: string): Uint8Array {
  const body = encoder.encode(JSON.stringify({ message }));
  return codec.encode({ headers: { ":exception-type": str(type), ":content-type": str("application/json"), ":message-type": str("exception") }, body });
}

/** The frames of a Messages API SSE stream: its `data:` payloads, one frame each. */
export function framesOfSse(sse: string): Uint8Array[] {
  const frames: Uint8Array[] = [];
  for (const block of sse.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
    if (data !== "") frames.push(chunkFrame(data));
  }
  return frames;
}

/** A copy of `frame` with one payload byte flipped: its message checksum no longer holds. */
export function withBadCrc(frame: Uint8Array): Uint8Array {
  const out = frame.slice();
  out[out.length - 8] ^= 0x01;
  return out;
}

/** A copy of `frame` whose prelude declares 40 bytes more than it holds, with the prelude's own checksum made to match. */
export function withBadLength(frame: Uint8Array): Uint8Array {
  const out = frame.slice();
  const view = new DataView(out.buffer);
  view.setUint32(0, frame.byteLength + 40, false);
  view.setUint32(8, crc32(out.subarray(0, 8)), false);
  return out;
}

/** Concatenates byte arrays. */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

/** CRC-32 (IEEE), for forging a prelude whose checksum holds. */
function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) {
    crc ^= b;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}
