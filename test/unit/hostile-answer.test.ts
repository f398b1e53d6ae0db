// What a hostile answer can make the engine do is bounded (docs/RELIABILITY.md "Trust boundaries"):
// block indices, how many blocks, unknown events and deltas, citations and signatures. Each case below ran
// for minutes before (a sparse array of 4,294,967,295 slots walked by filter/some; a copy of the whole
// list per unknown delta); each now ends in a few milliseconds with what it could keep, marked.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MAX_BLOCKS, StreamAccumulator, TRUNCATED_KEY, UNKNOWN_DELTAS_KEY, UNKNOWN_EVENTS_KEY } from "../../src/protocol/sse-accumulator.ts";

const start = (acc: StreamAccumulator) =>
  acc.apply({ type: "message_start", message: { id: "msg_h", type: "message", role: "assistant", model: "m", content: [], usage: {} } });
const block = (index: unknown, type = "text") => ({ type: "content_block_start", index, content_block: { type, text: "" } });
const text = (index: number, t: string) => ({ type: "content_block_delta", index, delta: { type: "text_delta", text: t } });
const end = (acc: StreamAccumulator) => {
  acc.apply({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 1 } });
  acc.apply({ type: "message_stop" });
};
// A bound that fails a test rather than hang the suite for minutes.
const bounded = { timeout: 20_000 };

describe("a hostile answer costs the engine bounded work", () => {
  it("a block index of 4294967294 is let go, counted, and the rest kept in order", bounded, () => {
    const acc = new StreamAccumulator();
    start(acc);
    acc.apply(block(0));
    acc.apply(text(0, "kept"));
    acc.apply(block(4294967294));
    acc.apply(text(4294967294, "never kept"));
    acc.apply({ type: "content_block_stop", index: 4294967294 });
    acc.apply(block(1));
    acc.apply(text(1, "also kept"));
    end(acc);
    assert.equal(acc.hasContent, true);
    const message = acc.message();
    assert.deepEqual(message.content.map((b) => b.text), ["kept", "also kept"]);
    assert.ok(acc.truncated, "what was let go is said");
    assert.ok(message[TRUNCATED_KEY] !== undefined);
  });

  it("indices that are not whole numbers within the bound are let go", bounded, () => {
    for (const index of [-1, 1.5, "2", null, undefined, Number.NaN, Infinity, MAX_BLOCKS, 2 ** 53]) {
      const acc = new StreamAccumulator();
      start(acc);
      acc.apply(block(index));
      acc.apply(text(0, "x"));
      end(acc);
      assert.deepEqual(acc.message().content, [], `index ${String(index)}`);
      assert.ok(acc.truncated, `index ${String(index)} counted`);
    }
  });

  it("blocks in any order come out in index order", bounded, () => {
    const acc = new StreamAccumulator();
    start(acc);
    for (const i of [3, 0, 2, 1]) {
      acc.apply(block(i));
      acc.apply(text(i, `b${i}`));
    }
    end(acc);
    assert.deepEqual(acc.message().content.map((b) => b.text), ["b0", "b1", "b2", "b3"]);
    assert.equal(acc.truncated, false);
  });

  it("200,000 unknown deltas, citations and signatures are linear, and kept only up to the bound", bounded, () => {
    const acc = new StreamAccumulator(1024 * 1024);
    start(acc);
    acc.apply(block(0));
    for (let i = 0; i < 200_000; i++) {
      acc.apply({ type: "content_block_delta", index: 0, delta: { type: "mystery_delta", n: i, pad: "p".repeat(20) } });
      acc.apply({ type: "content_block_delta", index: 0, delta: { type: "citations_delta", citation: { n: i } } });
      acc.apply({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "s".repeat(40) } });
    }
    end(acc);
    const message = acc.message();
    const kept = message.content[0][UNKNOWN_DELTAS_KEY] as unknown[];
    assert.ok(kept.length > 0 && kept.length < 200_000, `kept ${kept.length} unknown deltas`);
    assert.ok(JSON.stringify(message).length <= 1.1 * 1024 * 1024, `${JSON.stringify(message).length} chars kept`);
    assert.ok(acc.truncated);
  });

  it("a million unknown events are kept only up to the bound", bounded, () => {
    const acc = new StreamAccumulator(1024 * 1024);
    start(acc);
    for (let i = 0; i < 1_000_000; i++) acc.apply({ type: "mystery_event", n: i });
    end(acc);
    const events = acc.message()[UNKNOWN_EVENTS_KEY] as unknown[];
    assert.ok(events.length > 0 && events.length < 1_000_000, `${events.length} kept`);
    assert.ok(acc.truncated);
  });

  it(`at most ${MAX_BLOCKS} blocks are kept, however many start`, bounded, () => {
    const acc = new StreamAccumulator();
    start(acc);
    for (let i = 0; i < MAX_BLOCKS + 5000; i++) acc.apply(block(i));
    end(acc);
    assert.equal(acc.message().content.length, MAX_BLOCKS);
    assert.ok(acc.truncated);
  });

  it("message_delta fields and a message_start's blocks count against the bound too", bounded, () => {
    const acc = new StreamAccumulator(64 * 1024);
    acc.apply({
      type: "message_start",
      message: { id: "m", type: "message", role: "assistant", content: Array.from({ length: MAX_BLOCKS * 2 }, () => ({ type: "text", text: "" })) },
    });
    for (let i = 0; i < 20_000; i++) acc.apply({ type: "message_delta", delta: { [`k${i}`]: "v".repeat(10) } });
    const message = acc.message();
    assert.ok(message.content.length <= MAX_BLOCKS);
    assert.ok(JSON.stringify(message).length < 200 * 1024, `${JSON.stringify(message).length} chars`);
    assert.ok(acc.truncated);
  });
});
