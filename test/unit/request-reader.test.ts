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

describe("readRequest over a growing history", () => {
  const pad = "x".repeat(70 * 1024); // large enough for the reader to keep the prefix it read
  const user = (text: string, marked = false) => ({
    role: "user",
    content: [{ type: "text", text, ...(marked ? { cache_control: { type: "ephemeral" } } : {}) }],
  });
  const assistant = (text: string) => ({ role: "assistant", content: [{ type: "text", text }] });
  const read = (raw: string) => {
    const got = readRequest(enc(raw));
    const { messages, tools, ...rest } = JSON.parse(raw);
    assert.deepEqual(got.messages, hashMessages(messages), "the same as reading the whole body");
    assert.deepEqual(got.rest, rest);
    assert.equal(got.toolCount, Array.isArray(tools) ? tools.length : 0);
    return got;
  };

  it("each request re-sending the history with its cache marker moved reads as the whole body does", () => {
    const history: unknown[] = [user(pad)];
    for (let turn = 0; turn < 6; turn++) {
      const marked = history.map((m, i) => (i === history.length - 1 ? user((m as { content: { text: string }[] }).content[0].text, true) : m));
      read(JSON.stringify({ model: "m", messages: marked, system: [{ type: "text", text: "s" }], tools: [{ name: "t" }], max_tokens: turn }));
      history.push(assistant(`answer ${turn}`), turn % 2 ? 42 : user(`prompt ${turn}`), user(`prompt ${turn}b`));
    }
  });

  it("a body that differs from a known prefix anywhere inside it, or ends where it ends, still reads as the whole body", () => {
    const base = [user(pad), assistant("a"), user("u1"), assistant("b"), user("u2")];
    const head = `{"model":"m","messages":[`;
    const elements = base.map((m) => JSON.stringify(m));
    read(head + elements.join(",") + "]}");
    read(head + elements.join(",") + `],"metadata":{"messages":[1]}}`); // the same messages, another tail
    read(head + elements.slice(0, 3).join(",") + "]}"); // shorter
    read(head + [...elements.slice(0, 2), JSON.stringify(user("edited")), ...elements.slice(3)].join(",") + "]}");
    read(`{"model":"n","messages":[` + elements.join(",") + "]}"); // another head
    read(head + elements.join(",") + "," + elements.slice(0, 2).join(",") + `],"max_tokens":1}`);
  });

  it("what a known prefix would hide from the whole body's reading is read in full: a trailing comma, a second messages, a BOM", () => {
    const head = `{"model":"m","messages":[`;
    const elements = [user(pad), assistant("a"), user("u1")].map((m) => JSON.stringify(m));
    read(head + elements.join(",") + "]}");
    read(head + elements.join(",") + "," + JSON.stringify(assistant("b")) + "]}");
    const known = head + elements.join(",") + "," + JSON.stringify(assistant("b"));
    assert.throws(() => readRequest(enc(known + ",]}")), (e: unknown) => e instanceof UnreadableRequest && /not JSON/.test(e.message));
    assert.throws(() => readRequest(enc(known + ", ]}")), (e: unknown) => e instanceof UnreadableRequest && /not JSON/.test(e.message));
    read(known + `,{"role":"user","content":"c"}],"messages":[{"role":"user","content":"the last one counts"}]}`);
    const bom = enc(known + ",\uFEFF" + JSON.stringify(user("c")) + "]}");
    assert.throws(() => readRequest(bom), (e: unknown) => e instanceof UnreadableRequest && /not JSON/.test(e.message));
    read(known + "," + JSON.stringify(user("c")) + "]}");
  });
});
