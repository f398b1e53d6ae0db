/**
 * Bytes of a Bedrock streamed answer → the accumulated assistant message
 * (docs/DESIGN.md "Bedrock's event stream"). Bedrock frames the Messages API's events in AWS's event-stream encoding
 * (`application/vnd.amazon.eventstream`): binary messages of a prelude (total and header lengths, a CRC32),
 * headers, a payload and a CRC32 of the whole. Each `chunk` event's payload is `{"bytes": base64(event
 * JSON)}`; an `exception` message (`:exception-type`, a JSON `message`) ends the stream the way the API's
 * `error` event does. The frames are cut here and decoded, checksums checked, by AWS's own codec
 * (`@smithy/eventstream-codec`). Pure.
 *
 * A frame that does not decode — a wrong checksum, a length that does not hold, a stream that ends inside a
 * frame — stops the reading: `broken` says why, and nothing after it is read (the client has every byte the
 * upstream sent; what the mirror keeps is what came before, never passed off as whole).
 */
import { Buffer } from "node:buffer";
import { EventStreamCodec } from "@smithy/eventstream-codec";
import { StreamAccumulator } from "../sse-accumulator.ts";
import { MAX_MESSAGE_CHARS } from "../sse-reader.ts";

/** What the mirror's follower reads an answer with: this reader or the SSE reader. */
export interface AnswerReader {
  readonly acc: StreamAccumulator;
  feed(chunk: Uint8Array): void;
  end(): void;
  /** The answer is whole for the client, so it may be committed as one. */
  readonly whole: boolean;
  /** Why the framing could not be read (null or absent: it could, so far). */
  readonly broken?: string | null;
}

/** Prelude (total length, headers length, prelude CRC) and the message CRC at the end. */
const PRELUDE = 12;
const OVERHEAD = PRELUDE + 4;
/** The largest message AWS's event-stream encoding allows (16 MiB); a longer length is a broken frame. */
const MAX_FRAME = 16 * 1024 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const codec = new EventStreamCodec((bytes) => decoder.decode(bytes), (text) => encoder.encode(text));

/** Reads one Bedrock event stream into an accumulator, holding at most about `maxChars` of its content. */
export class EventStreamReader implements AnswerReader {
  readonly acc: StreamAccumulator;
  broken: string | null = null;
  /** Bytes of the frame being gathered (grown as needed), and how many it holds. */
  private buffer = new Uint8Array(0);
  private held = 0;
  /** Frames decoded so far, for saying where a stream broke. */
  private frames = 0;
  private ended = false;

  constructor(maxChars = MAX_MESSAGE_CHARS) {
    this.acc = new StreamAccumulator(maxChars);
  }

  /** Feeds one chunk of bytes; whole frames in it are decoded at once. */
  feed(chunk: Uint8Array): void {
    let at = 0;
    while (this.broken === null && at < chunk.byteLength) {
      if (this.held === 0 && chunk.byteLength - at >= 4) {
        // A frame that lies whole in the chunk is decoded where it lies, without a copy.
        const length = this.lengthAt(chunk, at);
        if (length === null) return;
        if (chunk.byteLength - at >= length) {
          this.frame(chunk.subarray(at, at + length));
          at += length;
          continue;
        }
      }
      at += this.gather(chunk.subarray(at));
    }
  }

  // AWS's decoder fails the whole answer on any broken frame, message_stop's too (Claude Code asks again): whole only at a clean end.
  get whole(): boolean {
    return this.ended && this.broken === null && this.acc.error === null && this.acc.whole;
  }

  /** The stream ended: a frame begun and not finished is a stream cut mid-frame. */
  end(): void {
    this.ended = true;
    if (this.broken === null && this.held > 0) this.fail(`the stream ended inside a frame (${this.held} bytes of frame ${this.frames + 1})`);
  }

  /** Copies what `bytes` holds of the frame being gathered, decoding it once whole; returns the bytes taken. */
  private gather(bytes: Uint8Array): number {
    const need = this.held < 4 ? 4 - this.held : this.lengthAt(this.buffer, 0)! - this.held;
    const take = Math.min(need, bytes.byteLength);
    if (this.held + take > this.buffer.byteLength) {
      const grown = new Uint8Array(Math.max(this.held + take, this.held < 4 ? 64 : this.lengthAt(this.buffer, 0)!));
      grown.set(this.buffer.subarray(0, this.held));
      this.buffer = grown;
    }
    this.buffer.set(bytes.subarray(0, take), this.held);
    this.held += take;
    if (this.held === 4) {
      const length = this.lengthAt(this.buffer, 0);
      if (length === null) return take;
      if (length > this.buffer.byteLength) {
        const grown = new Uint8Array(length);
        grown.set(this.buffer.subarray(0, 4));
        this.buffer = grown;
      }
    } else if (this.held > 4 && this.held === this.lengthAt(this.buffer, 0)) {
      const whole = this.buffer.subarray(0, this.held);
      this.held = 0;
      this.frame(whole);
      this.buffer = new Uint8Array(0); // a frame's buffer is not kept: the next may be small
    }
    return take;
  }

  /** The total length the frame at `at` declares, or null (and broken) when no frame can be that long. */
  private lengthAt(bytes: Uint8Array, at: number): number | null {
    const length = new DataView(bytes.buffer, bytes.byteOffset + at, 4).getUint32(0, false);
    if (length >= OVERHEAD && length <= MAX_FRAME) return length;
    this.fail(`frame ${this.frames + 1} declares ${length} bytes, which no event-stream frame can be (${OVERHEAD} to ${MAX_FRAME})`);
    return null;
  }

  /** Decodes one whole frame (the codec checks both checksums) and applies what it carries. */
  private frame(bytes: Uint8Array): void {
    let message;
    try {
      message = codec.decode(bytes);
    } catch (error) {
      return this.fail(`frame ${this.frames + 1} does not decode (${error instanceof Error ? error.message : String(error)})`);
    }
    this.frames++;
    const header = (name: string) => {
      const h = message.headers[name];
      return h !== undefined && h.type === "string" ? h.value : null;
    };
    const type = header(":message-type");
    if (type === "event") {
      if (header(":event-type") === "chunk") this.chunk(message.body);
      return;
    }
    if (type === "exception" || type === "error") {
      // Bedrock's exceptions carry {"message": …}; an `error` message says it in its headers.
      const name = header(":exception-type") ?? header(":error-code") ?? "exception";
      let text = header(":error-message");
      try {
        const body = JSON.parse(decoder.decode(message.body)) as { message?: unknown };
        if (typeof body?.message === "string") text = body.message;
      } catch {
        // A payload that is not JSON says nothing more than the headers did.
      }
      this.acc.apply({ type: "error", error: { type: name, message: text } });
    }
  }

  /** A `chunk` event: its payload's base64 `bytes` are one Messages API event's JSON. */
  private chunk(body: Uint8Array): void {
    let event: unknown;
    try {
      event = JSON.parse(decoder.decode(body));
    } catch {
      this.acc.malformed++;
      return;
    }
    const b64 = (event as { bytes?: unknown } | null)?.bytes;
    if (typeof b64 !== "string") {
      this.acc.malformed++;
      return;
    }
    this.acc.pushData(Buffer.from(b64, "base64").toString("utf8"));
  }

  private fail(why: string): void {
    this.broken ??= why;
    this.held = 0;
    this.buffer = new Uint8Array(0);
  }
}
