// A Bedrock event stream → the assistant message (docs/DESIGN.md "Bedrock's event stream"): frames cut here, decoded by AWS's
// codec; a frame that does not decode ends the reading, and says why. Pure.
import { Buffer } from "node:buffer";
import { EventStreamCodec } from "@smithy/eventstream-codec";
import { jsonObject } from "../json.ts";
import { type SseMessageReader, StreamAccumulator } from "../sse-accumulator.ts";

export type AnswerReader = SseMessageReader | EventStreamReader;

// A prelude (total length, headers length, its CRC), then the message's CRC; AWS's encoding allows 16 MiB at most.
const OVERHEAD = 16;
const MAX_FRAME = 16 * 1024 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const codec = new EventStreamCodec((bytes) => decoder.decode(bytes), (text) => encoder.encode(text));

export class EventStreamReader {
  readonly acc: StreamAccumulator;
  broken: string | null = null;
  // A frame's chunks, joined once it is whole, so a frame in many chunks is copied once.
  private chunks: Uint8Array[] = [];
  private held = 0;
  private frames = 0;
  private ended = false;

  constructor(maxChars: number) {
    this.acc = new StreamAccumulator(maxChars);
  }

  // AWS's decoder fails the whole answer on any broken frame, message_stop's too (Claude Code asks again): whole only at a clean end.
  get whole(): boolean {
    return this.ended && this.broken === null && this.acc.error === null && this.acc.whole;
  }

  feed(chunk: Uint8Array): void {
    if (this.broken !== null) return;
    this.chunks.push(chunk);
    this.held += chunk.byteLength;
    this.cutFrames();
    // What waits for the rest of its frame is copied: a view of the engine's batch would keep other streams' bytes alive.
    this.chunks = this.chunks.map((c) => (c.byteOffset === 0 && c.byteLength === c.buffer.byteLength ? c : new Uint8Array(c)));
  }

  private cutFrames(): void {
    while (this.held >= 4) {
      if (this.chunks[0].byteLength < 4) this.chunks = [Buffer.concat(this.chunks)];
      const length = new DataView(this.chunks[0].buffer, this.chunks[0].byteOffset, 4).getUint32(0, false);
      if (length < OVERHEAD || length > MAX_FRAME) {
        return this.fail(`frame ${this.frames + 1} declares ${length} bytes, which no event-stream frame can be (${OVERHEAD} to ${MAX_FRAME})`);
      }
      if (this.held < length) return;
      const bytes = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
      this.chunks = bytes.byteLength > length ? [bytes.subarray(length)] : [];
      this.held -= length;
      this.frame(bytes.subarray(0, length));
      if (this.broken !== null) return;
    }
  }

  end(): void {
    this.ended = true;
    if (this.broken === null && this.held > 0) this.fail(`the stream ended inside a frame (${this.held} bytes of frame ${this.frames + 1})`);
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
      const b64 = jsonObject(decoder.decode(message.body))?.bytes;
      if (typeof b64 === "string") this.acc.pushData(Buffer.from(b64, "base64").toString("utf8"));
      else this.acc.malformed++;
    } else if (type === "exception" || type === "error") {
      // Bedrock's exceptions carry {"message": …}, an `error` message says it in its headers.
      const said = jsonObject(decoder.decode(message.body))?.message;
      const text = typeof said === "string" ? said : header(":error-message");
      this.acc.apply({ type: "error", error: { type: header(":exception-type") ?? header(":error-code") ?? "exception", message: text } });
    }
  }

  private fail(why: string): void {
    this.broken ??= why;
    this.chunks = [];
    this.held = 0;
  }
}
