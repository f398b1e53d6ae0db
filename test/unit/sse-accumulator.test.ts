import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  messageFromJson,
  PARTIAL_JSON_KEY,
  SseMessageReader,
  StreamAccumulator,
  UNKNOWN_DELTAS_KEY,
  UNKNOWN_EVENTS_KEY,
} from "../../src/protocol/sse-accumulator.ts";
import { fixtureNames, loadFixture } from "../support/stub-upstream.ts";
import { messageJson } from "../support/sse-build.ts";

const encoder = new TextEncoder();

/** Reads `bytes` split at the given offsets; returns the accumulator. */
function readSplit(bytes: Uint8Array, cuts: number[]): StreamAccumulator {
  const reader = new SseMessageReader(32 * 1024 * 1024);
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    reader.feed(bytes.subarray(from, cut));
    from = cut;
  }
  reader.end();
  return reader.acc;
}

/** Every boundary for small recordings; for large ones, every boundary in the first and last 3 KiB and every 13th byte between. */
function boundaries(length: number): number[] {
  const out: number[] = [];
  for (let i = 1; i < length; i++) if (length <= 6000 || i < 3072 || i > length - 3072 || i % 13 === 0) out.push(i);
  return out;
}

describe("SseMessageReader + StreamAccumulator", () => {
  for (const name of fixtureNames()) {
    it(`${name}: the same message whatever the chunk boundaries`, () => {
      const bytes = encoder.encode(loadFixture(name));
      const whole = readSplit(bytes, []);
      const expected = whole.message(!whole.complete);
      for (const cut of boundaries(bytes.length)) {
        const acc = readSplit(bytes, [cut]);
        assert.deepEqual(acc.message(!acc.complete), expected, `split at byte ${cut}`);
      }
      const ones = readSplit(bytes, Array.from({ length: Math.min(bytes.length - 1, 4000) }, (_, i) => i + 1));
      assert.deepEqual(ones.message(!ones.complete), expected, "one byte at a time");
    });
  }

  it("folds text and tool_use (input_json_delta concatenated, parsed at block stop)", () => {
    const acc = readSplit(encoder.encode(loadFixture("ts_tool_use_response")), []);
    assert.equal(acc.complete, true);
    const m = acc.message();
    assert.equal(m.id, "msg_019Q1hrJbZG26Fb9BQhrkHEr");
    assert.deepEqual(m.content, [
      { type: "text", text: "I'll check the current weather in Paris for you." },
      { type: "tool_use", id: "toolu_01NRLabsLyVHZPKxbKvkfSMn", name: "get_weather", input: { location: "Paris" } },
    ]);
    assert.equal(m.stop_reason, "tool_use");
    assert.deepEqual(m.usage, { input_tokens: 377, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 65, service_tier: "standard" });
  });

  it("accumulates thinking and replaces the signature", () => {
    const m = readSplit(encoder.encode(loadFixture("thinking_text")), []).message();
    const thinking = m.content.find((b) => b.type === "thinking")!;
    assert.ok(String(thinking.thinking).length > 0);
    assert.equal(typeof thinking.signature, "string");
    assert.ok(m.content.some((b) => b.type === "text"));
  });

  it("keeps blocks that arrive complete in content_block_start", () => {
    const redacted = readSplit(encoder.encode(loadFixture("redacted_thinking")), []).message();
    assert.ok(redacted.content.some((b) => b.type === "redacted_thinking" && typeof b.data === "string"));
    const server = readSplit(encoder.encode(loadFixture("server_tool")), []).message();
    const types = server.content.map((b) => b.type);
    assert.ok(types.includes("server_tool_use") && types.includes("web_search_tool_result"), types.join());
    const use = server.content.find((b) => b.type === "server_tool_use")!;
    assert.equal(typeof use.input, "object");
    assert.ok(Object.keys(use.input as object).length > 0, "server tool input parsed from its deltas");
    const cited = server.content.find((b) => Array.isArray(b.citations));
    assert.ok(cited, "citations_delta appended to the text block's citations");
  });

  it("keeps unknown event, block and delta types as they came", () => {
    const m = readSplit(encoder.encode(loadFixture("unknown_types")), []).message();
    assert.ok(Array.isArray(m[UNKNOWN_EVENTS_KEY]) && (m[UNKNOWN_EVENTS_KEY] as { type: string }[]).some((e) => e.type === "future_event"));
    const block = m.content.find((b) => b.type === "future_block")!;
    assert.ok(block, "unknown block kept");
    assert.ok((block[UNKNOWN_DELTAS_KEY] as { type: string }[]).every((d) => d.type === "future_delta"));
  });

  it("merges cumulative usage and keeps stop_details, container and context_management", () => {
    const m = readSplit(encoder.encode(loadFixture("usage_delta")), []).message();
    assert.equal((m.usage as Record<string, unknown>).output_tokens, 137);
    assert.equal((m.usage as Record<string, unknown>).input_tokens, 1850);
    assert.equal((m.usage as Record<string, unknown>).service_tier, "standard", "a field message_delta does not carry is kept");
    assert.ok("server_tool_use" in (m.usage as object) === false, "a null field does not overwrite");
    assert.equal(m.stop_reason, "end_turn");
    assert.equal(m.stop_details, null);
    assert.deepEqual((m.container as { id: string }).id, "container_011CQ2vRdGv8Lw6Sx4MmyB1z");
    assert.ok(Array.isArray((m.context_management as { applied_edits: unknown[] }).applied_edits));
  });

  it("records an error event and does not complete", () => {
    const acc = readSplit(encoder.encode(loadFixture("error_midstream")), []);
    assert.equal(acc.complete, false);
    assert.equal(acc.error?.type, "overloaded_error");
    assert.equal(acc.hasContent, true);
  });

  it("closes a tool block that never stopped (max_tokens), keeping its partial JSON verbatim", () => {
    const acc = readSplit(encoder.encode(loadFixture("ts_incomplete_partial_json_response")), []);
    assert.equal(acc.complete, true);
    const m = acc.message();
    assert.equal(m.stop_reason, "max_tokens");
    const tool = m.content.find((b) => b.type === "tool_use")!;
    assert.match(String(tool[PARTIAL_JSON_KEY]), /^\{"filename": "taxes\.txt", "lines_of_text": \[/);
    assert.deepEqual(tool.input, {});
  });

  it("marks a message cut short as interrupted and keeps what arrived", () => {
    const bytes = encoder.encode(loadFixture("ts_tool_use_response"));
    const text = loadFixture("ts_tool_use_response");
    const cut = encoder.encode(text.slice(0, text.indexOf('"partial_json":"ar"')));
    const acc = readSplit(cut, []);
    assert.ok(bytes.length > cut.length);
    assert.equal(acc.complete, false);
    const m = acc.message(true);
    assert.equal(m.stop_reason, "interrupted");
    assert.equal(m.content[0].text, "I'll check the current weather in Paris for you.");
    assert.equal(m.content[1][PARTIAL_JSON_KEY], '{"location": "P');
  });

  it("parses multi-line data, `data:` without a space and CRLF", () => {
    const acc = readSplit(encoder.encode(loadFixture("multiline_data")), []);
    assert.equal(acc.complete, true);
    assert.equal(acc.malformed, 0);
  });

  it("counts a data payload that is not JSON instead of failing", () => {
    const acc = new StreamAccumulator();
    acc.pushData("not json");
    acc.pushData("[1,2]");
    assert.equal(acc.malformed, 2);
  });

  it("shapes a non-streaming response like a streamed one", () => {
    const body = messageJson("msg_1", "m", [{ type: "text", text: "hi" }], "end_turn");
    const m = messageFromJson(body);
    assert.deepEqual(m.content, body.content);
    assert.equal(m.stop_details, null);
    assert.deepEqual(m.usage, body.usage);
  });
});
