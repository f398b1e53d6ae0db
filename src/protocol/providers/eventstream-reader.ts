// A Bedrock event stream → the accumulated assistant message (docs/DESIGN.md "Bedrock's event stream"): frames cut here and
// decoded, checksums checked, by AWS's own codec; a frame that does not decode ends the reading, and says why. Pure.
import { Buffer } from "node:buffer";
import { EventStreamCodec } from "@smithy/eventstream-codec";
import { jsonObject } from "../json.ts";
import { MAX_MESSAGE_CHARS, StreamAccumulator } from "../sse-accumulator.ts";

/** This reader or the SSE reader. */
export interface AnswerReader {
  readonly acc: StreamAccumulator;
  feed(chunk: Uint8Array): void;
  end(): void;
  /** The answer is whole for the client, so it may be committed as one. */
  readonly whole: boolean;
  /** Why the framing could not be read. */
  readonly broken?: string | null;
}

// A prelude (total length, headers length, its CRC), then the message's CRC; AWS's encoding allows 16 MiB at most.
const OVERHEAD = 16;
const MAX_FRAME = 16 * 1024 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const codec = new EventStreamCodec((bytes) => decoder.decode(bytes), (text) => encoder.encode(text));

export class EventStreamReader implements AnswerReader {
  readonly acc: StreamAccumulator;
  broken: string | null = null;
  // A frame split across chunks is gathered: its 4 length bytes first, then into a buffer of that length.
  private buffer = new Uint8Array(4);
  private held = 0;
  private frames = 0;
  private ended = false;

  constructor(maxChars = MAX_MESSAGE_CHARS) {
    this.acc = new StreamAccumulator(maxChars);
  }

  // AWS's decoder fails the whole answer on any broken frame, message_stop's too (Claude Code asks again): whole only at a clean end.
  get whole(): boolean {
    return this.ended && this.broken === null && this.acc.error === null && this.acc.whole;
  }

  feed(chunk: Uint8Array): void {
    let at = 0;
    while (this.broken === null && at < chunk.byteLength) {
      if (this.held === 0 && chunk.byteLength - at >= 4) {
        // A frame that lies whole in the chunk is decoded where it lies, without a copy.
        const length = this.lengthAt(chunk, at);
        if (length === null) return;
        if (chunk.byteLength - at >= length) {
          this.frame(chunk.subarray(at, at += length));
          continue;
        }
      }
      const take = Math.min(this.buffer.byteLength - this.held, chunk.byteLength - at);
      this.buffer.set(chunk.subarray(at, at += take), this.held);
      this.held += take;
      if (this.held < this.buffer.byteLength) continue;
      if (this.buffer.byteLength === 4) {
        const length = this.lengthAt(this.buffer, 0);
        if (length === null) return;
        const frame = new Uint8Array(length);
        frame.set(this.buffer);
        this.buffer = frame;
      } else {
        const frame = this.buffer;
        this.held = 0;
        this.buffer = new Uint8Array(4);
        this.frame(frame);
      }
    }
  }

  end(): void {
    this.ended = true;
    if (this.broken === null && this.held > 0) this.fail(`the stream ended inside a frame (${this.held} bytes of frame ${this.frames + 1})`);
  }

  private lengthAt(bytes: Uint8Array, at: number): number | null {
    const length = new DataView(bytes.buffer, bytes.byteOffset + at, 4).getUint32(0, false);
    if (length >= OVERHEAD && length <= MAX_FRAME) return length;
    this.fail(`frame ${this.frames + 1} declares ${length} bytes, which no event-stream frame can be (${OVERHEAD} to ${MAX_FRAME})`);
    return null;
  }

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
    if (type === "event" && header(":event-type") === "chunk") {
      // Its payload is {"bytes": base64(one Messages API event)}.
      const b64 = jsonObject(decoder.decode(message.body))?.bytes;
      if (typeof b64 === "string") this.acc.pushData(Buffer.from(b64, "base64").toString("utf8"));
      else this.acc.malformed++;
    } else if (type === "exception" || type === "error") {
      // The API's error event: Bedrock's exceptions carry {"message": …}, an `error` message says it in its headers.
      const said = jsonObject(decoder.decode(message.body))?.message;
      const text = typeof said === "string" ? said : header(":error-message");
      this.acc.apply({ type: "error", error: { type: header(":exception-type") ?? header(":error-code") ?? "exception", message: text } });
    }
  }

  private fail(why: string): void {
    this.broken ??= why;
    this.held = 0;
    this.buffer = new Uint8Array(4);
  }
}
