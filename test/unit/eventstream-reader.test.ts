// Reading a Bedrock event stream (docs/DESIGN.md "Bedrock's event stream"): frames made by AWS's own codec,
// fed split at every byte boundary, fold into the same message as the SSE they carry; an exception frame
// is the API's error event; a wrong checksum, a wrong length or a stream cut inside a frame ends the
// reading with a reason, keeping only what came before.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { EventStreamReader } from "../../src/protocol/providers/eventstream-reader.ts";
import { SseMessageReader } from "../../src/protocol/sse-accumulator.ts";
import { chunkFrameOf, concatBytes, exceptionFrame, framesOfSse, withBadCrc, withBadLength } from "../support/eventstream-build.ts";
import { textReply, toolUseReply } from "../support/sse-build.ts";

// The tap's default bound (SESSIONTAP_MAX_MESSAGE_BYTES).
const MAX = 32 * 1024 * 1024;
const enc = (s: string) => new TextEncoder().encode(s);
const sseOf = (chunks: string[]) => chunks.join("");

/** The message an SSE reader makes of the same events, to compare with. */
function viaSse(sse: string) {
  const r = new SseMessageReader(MAX);
  r.feed(enc(sse));
  r.end();
  return r.acc.message(false);
}

describe("EventStreamReader", () => {
  const sse = sseOf(toolUseReply("Bash", { command: "echo hi" }, { id: "msg_es_1", toolUseId: "toolu_es_1", preText: "I'll run it." }));
  const bytes = concatBytes(framesOfSse(sse));

  it("folds chunk frames into the message the same events make as SSE, fed whole", () => {
    const r = new EventStreamReader(MAX);
    r.feed(bytes);
    r.end();
    assert.equal(r.broken, null);
    assert.equal(r.acc.whole, true);
    assert.deepEqual(r.acc.message(false), viaSse(sse));
  });

  it("gives the same message however the bytes are split (every split point, and byte by byte)", () => {
    const expected = viaSse(sse);
    for (let cut = 1; cut < bytes.byteLength; cut += 7) {
      const r = new EventStreamReader(MAX);
      r.feed(bytes.subarray(0, cut));
      r.feed(bytes.subarray(cut));
      r.end();
      assert.equal(r.broken, null, `split at ${cut}`);
      assert.deepEqual(r.acc.message(false), expected, `split at ${cut}`);
    }
    const r = new EventStreamReader(MAX);
    for (let i = 0; i < bytes.byteLength; i++) r.feed(bytes.subarray(i, i + 1));
    r.end();
    assert.equal(r.broken, null);
    assert.deepEqual(r.acc.message(false), expected);
  });

  it("an exception frame is the API's error event: the message is not whole, what came before is kept", () => {
    const frames = framesOfSse(sseOf(textReply("Hello there", { id: "msg_es_2" })));
    const r = new EventStreamReader(MAX);
    r.feed(concatBytes([...frames.slice(0, 3), exceptionFrame("throttlingException", "Too many requests")]));
    r.end();
    assert.equal(r.broken, null, "an exception is well framed");
    assert.equal(r.acc.whole, false);
    assert.deepEqual(r.acc.error, { type: "throttlingException", message: "Too many requests" });
    assert.equal(r.acc.hasContent, true);
    assert.equal(r.acc.message(true).stop_reason, "interrupted");
  });

  it("a wrong checksum stops the reading there, with a reason; nothing after it is read", () => {
    const frames = framesOfSse(sse);
    const r = new EventStreamReader(MAX);
    r.feed(concatBytes([...frames.slice(0, 2), withBadCrc(frames[2]), ...frames.slice(3)]));
    r.end();
    assert.match(r.broken ?? "", /^frame 3 does not decode \(.*checksum/);
    assert.equal(r.acc.whole, false);
    assert.equal(r.acc.complete, false, "message_stop after the bad frame was not read");
  });

  it("a wrong length stops the reading (the frame's checksum no longer holds)", () => {
    const frames = framesOfSse(sse);
    const r = new EventStreamReader(MAX);
    r.feed(concatBytes([...frames.slice(0, 2), withBadLength(frames[2]), ...frames.slice(3)]));
    r.end();
    assert.match(r.broken ?? "", /^frame 3 /);
    assert.equal(r.acc.whole, false);
  });

  it("a length no frame can have stops the reading at once, without waiting for bytes", () => {
    for (const length of [0, 15, 0x7fffffff]) {
      const head = new Uint8Array(8);
      new DataView(head.buffer).setUint32(0, length, false);
      const r = new EventStreamReader(MAX);
      r.feed(head);
      assert.match(r.broken ?? "", new RegExp(`^frame 1 declares ${length} bytes`));
    }
  });

  it("a stream cut inside a frame is broken at its end; one cut between frames is only unfinished", () => {
    const frames = framesOfSse(sse);
    const before = concatBytes(frames.slice(0, 4));
    const r = new EventStreamReader(MAX);
    r.feed(concatBytes([before, frames[4].subarray(0, 10)]));
    r.end();
    assert.match(r.broken ?? "", /^the stream ended inside a frame \(10 bytes of frame 5\)/);
    const clean = new EventStreamReader(MAX);
    clean.feed(before);
    clean.end();
    assert.equal(clean.broken, null);
    assert.equal(clean.acc.whole, false);
  });

  it("the answer is whole only once the stream ended cleanly: message_stop's own frame broken, or cut, leaves it unwhole", () => {
    const frames = framesOfSse(sse);
    const last = frames.length - 1;
    const reader = (parts: Uint8Array[], end = true) => {
      const r = new EventStreamReader(MAX);
      r.feed(concatBytes(parts));
      if (end) r.end();
      return r;
    };
    const open = reader(frames, false);
    assert.equal(open.acc.whole, true, "message_delta and message_stop were read");
    assert.equal(open.whole, false, "but the stream has not ended: a frame may still break");
    assert.equal(reader(frames).whole, true);
    const badStop = reader([...frames.slice(0, last), withBadCrc(frames[last])]);
    assert.match(badStop.broken ?? "", new RegExp(`^frame ${last + 1} does not decode \\(.*checksum`));
    assert.equal(badStop.whole, false);
    const cutStop = reader([...frames.slice(0, last), frames[last].subarray(0, 20)]);
    assert.match(cutStop.broken ?? "", /^the stream ended inside a frame/);
    assert.equal(cutStop.whole, false);
    const noStop = reader(frames.slice(0, last));
    assert.equal(noStop.whole, true, "a clean end after message_delta is whole, as with SSE");
    assert.equal(reader([...frames.slice(0, last), exceptionFrame("internalServerException", "late")]).whole, false, "an exception after message_delta");
  });

  it("a chunk whose payload is not {bytes: …} is counted as malformed and the reading goes on", () => {
    const frames = framesOfSse(sse);
    const r = new EventStreamReader(MAX);
    r.feed(concatBytes([frames[0], chunkFrameOf('{"other":1}'), chunkFrameOf("not json"), ...frames.slice(1)]));
    r.end();
    assert.equal(r.acc.malformed, 2);
    assert.equal(r.broken, null);
    assert.deepEqual(r.acc.message(false), viaSse(sse));
  });
});
