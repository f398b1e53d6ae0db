// The event-stream splitter against eventsource-parser (the reference the tap used before) on every
// recorded stream, split at every boundary, and on the format's corners.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createParser } from "eventsource-parser";
import { SseLines } from "../../src/protocol/sse-lines.ts";
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
    lines.feed('event: message_stop\ndata: {"type":"message_st');
    assert.equal(lines.pendingWatched, true);
    lines.feed('op"}\n');
    assert.equal(lines.pendingWatched, true, "its blank line has not come");
    lines.feed("\n");
    assert.equal(lines.pendingWatched, false);
  });

  it("an event past the bound is dropped whole and reported; the events around it are read, split anywhere", () => {
    const big = `event: content_block_delta\ndata: ${"x".repeat(150)}\ndata: more\n\n`;
    const multi = `data: ${"y".repeat(60)}\ndata: ${"y".repeat(60)}\n\n`;
    const text = `data: before\n\n${big}data: between\r\n\r\n${multi}event: message_stop\ndata: after\n\n`;
    const want = ["before", "between", "after"];
    for (let cut = 0; cut <= text.length; cut++) {
      const out: string[] = [];
      const dropped: number[] = [];
      const lines = new SseLines((d) => out.push(d), 100, "message_stop", (chars) => dropped.push(chars));
      lines.feed(text.slice(0, cut));
      lines.feed(text.slice(cut));
      lines.end();
      assert.deepEqual(out, want, `cut ${cut}`);
      assert.equal(dropped.length, 2, `cut ${cut}: both large events reported`);
      assert.ok(dropped.every((n) => n > 100), `cut ${cut}: ${dropped}`);
    }
  });

  it("a dropped event never holds more than the bound, even one line of it that never ends", () => {
    const lines = new SseLines(() => assert.fail("nothing whole"), 1000);
    let reported = 0;
    const watching = new SseLines(() => {}, 1000, "message_stop", () => reported++);
    for (let i = 0; i < 500; i++) {
      lines.feed("z".repeat(997));
      watching.feed("z".repeat(997));
    }
    assert.equal(reported, 1);
    assert.equal((watching as unknown as { line: string }).line.length, 0, "the unended line is not kept");
    watching.end();
  });
});
