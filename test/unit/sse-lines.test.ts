// The event-stream splitter against eventsource-parser (the reference the tap used before) on every
// recorded stream, split at every boundary, and on the format's corners.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createParser } from "eventsource-parser";
import { EventTooLarge, SseLines } from "../../src/protocol/sse-lines.ts";
import { fixtureNames, loadFixture } from "../support/stub-upstream.ts";

/** The data of every event, as SseLines reads `parts`. */
function ours(parts: string[]): string[] {
  const out: string[] = [];
  const lines = new SseLines((d) => out.push(d), 1e9);
  for (const p of parts) lines.feed(p);
  lines.end();
  return out;
}

/** The same, as eventsource-parser reads it (a final blank line supplied, as the reader's end() does). */
function reference(parts: string[]): string[] {
  const out: string[] = [];
  const parser = createParser({ onEvent: (e) => out.push(e.data) });
  for (const p of parts) parser.feed(p);
  parser.feed("\n\n");
  return out;
}

describe("SseLines", () => {
  for (const name of fixtureNames()) {
    it(`${name}: the same events as eventsource-parser, split at every boundary`, () => {
      const text = loadFixture(name);
      const whole = reference([text]);
      assert.deepEqual(ours([text]), whole);
      const step = text.length > 6000 ? 7 : 1;
      for (let cut = 1; cut < text.length; cut += step) assert.deepEqual(ours([text.slice(0, cut), text.slice(cut)]), whole, `cut ${cut}`);
    });
  }

  it("line ends: \\n, \\r\\n (also split across chunks), \\r; comments, fields without a colon, multi-line data, a BOM", () => {
    const corners = "\ufeffdata: a\r\ndata:b\r\n\r\n: a comment\rdata\r\rid: 7\nevent: x\ndata:  c\n\n";
    const want = ["a\nb", "", " c"];
    assert.deepEqual(ours([corners]), want);
    for (let cut = 1; cut < corners.length; cut++) assert.deepEqual(ours([corners.slice(0, cut), corners.slice(cut)]), want, `cut ${cut}`);
  });

  it("a last event without its blank line still counts at the end", () => {
    assert.deepEqual(ours(['data: {"type":"message_stop"}']), ['{"type":"message_stop"}']);
    assert.deepEqual(ours(['data: {"type":"message_stop"}\n']), ['{"type":"message_stop"}']);
  });

  it("says when an event that mentions a word has begun but not ended", () => {
    const lines = new SseLines(() => {}, 1e9);
    lines.feed('event: content_block_delta\ndata: {"text":"hi"}\n\n');
    assert.equal(lines.pendingWatched, false);
    lines.feed("event: message_stop\ndata: {\"type\":\"message_st");
    assert.equal(lines.pendingWatched, true);
    lines.feed('op"}\n');
    assert.equal(lines.pendingWatched, true, "its blank line has not come");
    lines.feed("\n");
    assert.equal(lines.pendingWatched, false);
  });

  it("an event past the bound throws EventTooLarge", () => {
    const lines = new SseLines(() => {}, 100);
    assert.throws(() => lines.feed(`data: ${"x".repeat(200)}`), EventTooLarge);
    const multi = new SseLines(() => {}, 100);
    assert.throws(() => {
      for (let i = 0; i < 20; i++) multi.feed(`data: ${"y".repeat(10)}\n`);
    }, EventTooLarge);
  });
});
