import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { finalEventStart } from "../../src/protocol/sse-reader.ts";
import { textReply } from "../support/stub-upstream.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("finalEventStart()", () => {
  it("points at the event holding message_stop, after the blank line before it", () => {
    const text = textReply("hello", { deltas: 2 }).join("");
    const at = finalEventStart(bytes(text));
    assert.equal(text.slice(at), 'event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });

  it("handles CRLF and CR line ends", () => {
    const crlf = 'event: ping\r\ndata: {}\r\n\r\nevent: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n';
    assert.equal(crlf.slice(finalEventStart(bytes(crlf))), 'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n');
    const cr = 'data: {}\r\rdata: {"type":"message_stop"}\r\r';
    assert.equal(cr.slice(finalEventStart(bytes(cr))), 'data: {"type":"message_stop"}\r\r');
  });

  it("is 0 when the final event began in an earlier chunk, or a text mentions message_stop earlier", () => {
    assert.equal(finalEventStart(bytes('_stop"}\n\n')), 0);
    assert.equal(finalEventStart(bytes('data: {"type":"message_stop"}\n\n')), 0);
    const tricky = 'data: {"text":"say message_stop"}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n';
    assert.equal(tricky.slice(finalEventStart(bytes(tricky))), 'event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });
});
