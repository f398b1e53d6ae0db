// The request reader: a body becomes its messages with their identities (lineage.ts), the tools counted and
// not kept, everything else as sent; a body it cannot read is one clear reason.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { hashMessages, readRequest, UnreadableRequest } from "../../src/protocol/lineage.ts";

const enc = (s: string) => new TextEncoder().encode(s);

describe("readRequest", () => {
  it("reads the real Claude Code captures: every message with its identity, the tools counted, the rest as sent", () => {
    for (const capture of ["cc-2.1.328-tool-session", "cc-2.1.328-interactive-compact-rewind"]) {
      const lines = readFileSync(new URL(`../fixtures/claude-code/${capture}/requests.jsonl`, import.meta.url), "utf8").trim().split("\n");
      for (const line of lines) {
        const r = JSON.parse(line);
        const raw = typeof r.body === "string" ? r.body : JSON.stringify(r.body);
        const { messages, tools, ...rest } = JSON.parse(raw);
        const got = readRequest(enc(raw));
        assert.deepEqual(got.messages, hashMessages(messages));
        assert.equal(got.toolCount, Array.isArray(tools) ? tools.length : 0);
        assert.deepEqual(got.rest, rest, "everything but the messages and tools");
        assert.ok(!("tools" in got.rest), "the tools are counted, not kept");
      }
    }
  });

  it("a body it cannot read is one UnreadableRequest naming why", () => {
    const cases: [Uint8Array, RegExp][] = [
      [enc("not json"), /not JSON/],
      [enc("[1,2]"), /not JSON/],
      [enc(`{"model":"m"}`), /no messages array/],
      [enc(`{"messages":"no"}`), /no messages array/],
      [new Uint8Array([0x7b, 0x22, 0x6d, 0x65, 0x73, 0x73, 0x61, 0x67, 0x65, 0x73, 0x22, 0x3a, 0x5b, 0x22, 0xff, 0x22, 0x5d, 0x7d]), /not UTF-8/],
      [enc(`{"messages":[{"role":"user","content":"a"}, {bad}]}`), /not JSON/],
    ];
    for (const [bytes, why] of cases) assert.throws(() => readRequest(bytes), (e: unknown) => e instanceof UnreadableRequest && why.test(e.message));
    const fine = readRequest(enc(JSON.stringify({ messages: [{ role: "user", content: "fine" }, 42, { role: "assistant", content: "ok" }] })));
    assert.deepEqual(fine.messages.map((m) => m.role), ["user", "assistant"], "an entry that is not a message is left out");
  });
});
