import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FinalEventWatch } from "../../src/tap/final-event-watch.ts";
import { textReply } from "../support/stub-upstream.ts";

const bytes = (s: string) => new TextEncoder().encode(s);
/** Where a fresh watch holds `chunk` from (the final event's start), after it saw `before`. */
const holdFrom = (chunk: string, before = "") => {
  const watch = new FinalEventWatch();
  if (before !== "") watch.holdFrom(bytes(before));
  return watch.holdFrom(bytes(chunk));
};

describe("FinalEventWatch: where the final event begins in a chunk", () => {
  it("points at the event holding message_stop, after the blank line before it", () => {
    const text = textReply("hello", { deltas: 2 }).join("");
    const at = holdFrom(text);
    assert.equal(text.slice(at), 'event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });

  it("handles CRLF and CR line ends", () => {
    const crlf = 'event: ping\r\ndata: {}\r\n\r\nevent: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n';
    assert.equal(crlf.slice(holdFrom(crlf)), 'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n');
    const cr = 'data: {}\r\rdata: {"type":"message_stop"}\r\r';
    assert.equal(cr.slice(holdFrom(cr)), 'data: {"type":"message_stop"}\r\r');
  });

  it("is 0 when the final event began in an earlier chunk, or a text mentions message_stop earlier", () => {
    assert.equal(holdFrom('_stop"}\n\n', 'data: {"type":"message'), 0);
    assert.equal(holdFrom('data: {"type":"message_stop"}\n\n'), 0);
    const tricky = 'data: {"text":"say message_stop"}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n';
    assert.equal(tricky.slice(holdFrom(tricky)), 'event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });
});

describe("FinalEventWatch: the relay's search for the final event, at every chunk boundary", () => {
  const stream = textReply("hello there, message_stop is only a word here", { deltas: 4 }).join("");
  const finalAt = stream.lastIndexOf("event: message_stop");

  it("split at every byte: a chunk holding (part of) the final event's marker is a candidate, held from inside that event", () => {
    const all = bytes(stream);
    for (let cut = 1; cut < all.length; cut++) {
      const watch = new FinalEventWatch();
      const found: number[] = [];
      let offset = 0;
      for (const part of [all.subarray(0, cut), all.subarray(cut)]) {
        const at = watch.holdFrom(part);
        if (at >= 0) found.push(offset + at);
        offset += part.length;
      }
      const last = found.at(-1) ?? -1;
      assert.ok(last >= finalAt - 2 && last < all.length, `cut ${cut}: candidates ${found}, the final event spans ${finalAt}..${all.length}`);
    }
  });

  it("split into chunks of every size from 1 to 16 bytes: the marker is found across any number of short chunks", () => {
    const all = bytes(stream);
    for (let size = 1; size <= 16; size++) {
      const watch = new FinalEventWatch();
      let last = -1;
      for (let offset = 0; offset < all.length; offset += size) {
        const at = watch.holdFrom(all.subarray(offset, offset + size));
        if (at >= 0) last = offset + at;
      }
      assert.ok(last >= finalAt - 2 && last < all.length, `size ${size}: last candidate at ${last}, the final event spans ${finalAt}..${all.length}`);
    }
    const none = new FinalEventWatch();
    const plain = bytes('event: ping\ndata: {"type":"ping"}\n\n'.repeat(20));
    for (let offset = 0; offset < plain.length; offset += 3) assert.equal(none.holdFrom(plain.subarray(offset, offset + 3)), -1);
  });

  it("a chunk without the word is not a candidate; a text that says it is one (a false candidate, settled by the mirror)", () => {
    const watch = new FinalEventWatch();
    assert.equal(watch.holdFrom(bytes('event: ping\ndata: {"type":"ping"}\n\n')), -1);
    assert.ok(watch.holdFrom(bytes('data: {"delta":{"text":"about message_stop"}}\n\n')) >= 0);
  });
});
