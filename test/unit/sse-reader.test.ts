// The mirror's SSE reader (src/protocol/sse-accumulator.ts: eventsource-parser between the decoder and the
// accumulator) on the event-stream format's corners, each split at every character: the line ends, a last
// event without its blank line, and an event past the bound, dropped whole with the events around it read.
// The recorded streams, split at every byte, are in sse-accumulator.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SseMessageReader, UNKNOWN_EVENTS_KEY } from "../../src/protocol/sse-accumulator.ts";

const encoder = new TextEncoder();

/** Reads `parts` (each encoded as one chunk) to the end; returns the reader. */
function read(parts: string[], maxChars = 32 * 1024 * 1024): SseMessageReader {
  const reader = new SseMessageReader(maxChars);
  for (const p of parts) reader.feed(encoder.encode(p));
  reader.end();
  return reader;
}

/** The `n` of every unknown event (`{"type":"x","n":…}`) the reader kept, in order. */
const names = (reader: SseMessageReader) => ((reader.acc.message()[UNKNOWN_EVENTS_KEY] ?? []) as { n: string }[]).map((e) => e.n);
/** An unknown event's data, which the accumulator keeps as it came. */
const x = (n: string) => `{"type":"x","n":"${n}"}`;

/** `text` whole, and cut in two at every character. */
function splits(text: string): [string, string[]][] {
  const out: [string, string[]][] = [["whole", [text]]];
  for (let cut = 0; cut <= text.length; cut++) out.push([`cut ${cut}`, [text.slice(0, cut), text.slice(cut)]]);
  return out;
}

describe("SseMessageReader", () => {
  it("line ends: \\n, \\r\\n (also split across chunks), \\r; comments, fields without a colon, multi-line data, a BOM", () => {
    const corners = `\ufeffdata: {"type":"x",\r\ndata:"n":"a"}\r\n\r\n: a comment\rdata\r\rid: 7\nevent: x\ndata:  ${x("c")}\n\n`;
    for (const [label, parts] of splits(corners)) {
      const reader = read(parts);
      assert.deepEqual(names(reader), ["a", "c"], label);
      assert.equal(reader.acc.malformed, 1, `${label}: the data-less "data" line is an empty event`);
    }
  });

  it("a last event without its blank line still counts at the end: a message_delta's stop_reason makes the answer whole", () => {
    for (const end of ["", "\n", "\r"]) {
      const stop = `data: {"type":"message_stop"}${end}`;
      for (const [label, parts] of splits(stop)) assert.equal(read(parts).acc.complete, true, `${JSON.stringify(stop)} ${label}`);
      const delta = `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}}${end}`;
      for (const [label, parts] of splits(delta)) {
        const { acc } = read(parts);
        assert.equal(acc.whole, true, `${JSON.stringify(delta)} ${label}`);
        assert.equal(acc.message().stop_reason, "end_turn");
      }
    }
  });

  it("a line cut off by the end of the stream is counted, not kept", () => {
    const reader = read([`data: ${x("whole")}\n\ndata: {"type":"x","n":"cut`]);
    assert.deepEqual(names(reader), ["whole"]);
    assert.equal(reader.acc.malformed, 1);
  });

  it("an event past the bound is dropped whole and counted; the events around it are read, split anywhere", () => {
    const big = `event: content_block_delta\ndata: ${"x".repeat(150)}\ndata: more\n\n`;
    const multi = `data: ${"y".repeat(60)}\ndata: ${"y".repeat(60)}\n\n`;
    const crs = `data: ${"z".repeat(120)}\r\r`;
    // Were the \n of a \r\n read alone (split from its \r), the dropped event would seem to end there.
    const crlf = `data: ${"w".repeat(120)}\r\ndata: ${x("part of a dropped event")}\r\n\r\n`;
    const text = `data: ${x("before")}\n\n${big}data: ${x("between")}\r\n\r\n${multi}${crs}${crlf}event: message_stop\ndata: ${x("after")}\n\n`;
    for (const [label, parts] of splits(text)) {
      const reader = read(parts, 100);
      assert.deepEqual(names(reader), ["before", "between", "after"], label);
      // Each dropped event counts more than the bound: all four are counted.
      assert.ok(reader.acc.dropped > 400, `${label}: ${reader.acc.dropped} characters counted as let go`);
      assert.equal(reader.acc.truncated, true);
    }
  });

  it("the rest of a dropped event is passed over whatever its chunks: a \\r\\n split across two of them ends one line", () => {
    const text = `data: ${"w".repeat(120)}\r\ndata: ${x("part of a dropped event")}\r\n\r\ndata: ${x("after")}\n\n`;
    for (let cut = 111; cut < text.length; cut++) {
      const reader = read([text.slice(0, 110), text.slice(110, cut), text.slice(cut)], 100);
      assert.deepEqual(names(reader), ["after"], `cut ${cut}`);
    }
  });

  it("an event past the bound is counted once, however long its line that does not end, and reading goes on after it", () => {
    const reader = new SseMessageReader(1000);
    for (let i = 0; i < 500; i++) reader.feed(encoder.encode("z".repeat(997)));
    reader.feed(encoder.encode(`\n\ndata: ${x("after")}\n\n`));
    reader.end();
    assert.equal(reader.acc.dropped, 1001, "one event let go, once");
    assert.deepEqual(names(reader), ["after"]);
  });
});
