// The incremental request reader must read every body exactly as a whole parse would: same messages, same
// hashes, chains and keys, same content, same rest; while parsing only what is new in steady state.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { commonPrefix, RequestReader, UnreadableRequest } from "../../src/protocol/request-reader.ts";
import { hashMessages } from "../../src/protocol/lineage.ts";

const enc = (s: string) => new TextEncoder().encode(s);

/** What a whole parse says of a body. */
function whole(raw: string) {
  const body = JSON.parse(raw);
  const { messages, tools, ...rest } = body;
  return { rest: { ...rest, messages: [] }, toolCount: Array.isArray(tools) ? tools.length : 0, messages: hashMessages(messages) };
}

/** Asserts the reader's result equals the whole parse's. */
function same(reader: RequestReader, key: string | null, raw: string) {
  const got = reader.read(key, enc(raw));
  const want = whole(raw);
  assert.equal(got.messages.length, want.messages.length);
  got.messages.forEach((m, i) => {
    const w = want.messages[i];
    assert.deepEqual([m.role, m.hash, m.chain, m.key], [w.role, w.hash, w.chain, w.key], `message ${i}`);
    assert.deepEqual(m.content, w.content, `content of message ${i}`);
  });
  assert.deepEqual({ ...got.rest, messages: [] }, want.rest);
  assert.equal(got.toolCount, want.toolCount, "the tools are counted, not kept");
  return got;
}

/** A Claude-Code-like body: cache markers on the last two user messages, the system prompt and tools after the messages. */
function claudeBody(turns: { role: string; content: unknown }[], system = "You are Claude Code", model = "claude-opus") {
  const messages = turns.map((m, i) => {
    const marked = m.role === "user" && i >= turns.length - 3 && Array.isArray(m.content);
    return marked
      ? {
        ...m,
        content: (m.content as Record<string, unknown>[]).map((b, j, all) => (j === all.length - 1 ? { ...b, cache_control: { type: "ephemeral" } } : b)),
      }
      : m;
  });
  return JSON.stringify({
    model,
    messages,
    system: [{ type: "text", text: system }],
    tools: [{ name: "Bash", input_schema: {} }],
    metadata: { user_id: '{"session_id":"s"}' },
    max_tokens: 100,
    stream: true,
  });
}

describe("RequestReader", () => {
  it("reads the real Claude Code captures as a whole parse does, request after request", () => {
    for (const capture of ["cc-2.1.328-tool-session", "cc-2.1.328-interactive-compact-rewind"]) {
      const reader = new RequestReader();
      const lines = readFileSync(new URL(`../fixtures/claude-code/${capture}/requests.jsonl`, import.meta.url), "utf8").trim().split("\n");
      for (const line of lines) {
        const r = JSON.parse(line);
        same(reader, r.headers["x-claude-code-session-id"] ?? null, typeof r.body === "string" ? r.body : JSON.stringify(r.body));
      }
    }
  });

  it("a 60-turn conversation with moving cache markers, a collapsing message, side requests, a new system prompt and model: exact, and only the new tail parsed", () => {
    const reader = new RequestReader();
    const turns: { role: string; content: unknown }[] = [];
    const parsed: number[] = [];
    for (let t = 0; t < 60; t++) {
      turns.push({ role: "user", content: [{ type: "text", text: `question ${t} "quoted" ] }` }] });
      if (t === 10) turns.push({ role: "system", content: "environment: cwd /x" });
      const system = t >= 30 ? "You are Claude Code, renewed" : "You are Claude Code";
      const model = t >= 45 ? "claude-sonnet" : "claude-opus";
      parsed.push(same(reader, "s", claudeBody(turns, system, model)).parsed);
      if (t % 7 === 3) {
        same(reader, "s", JSON.stringify({ model: "claude-haiku", messages: [{ role: "user", content: `title for ${t}` }], system: "Generate a title" }));
      }
      turns.push({
        role: "assistant",
        content: [{ type: "text", text: `answer ${t}` }, { type: "tool_use", id: `t${t}`, name: "Bash", input: { command: "ls" } }],
      });
      turns.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `t${t}`, content: "ok" }] });
      if (t === 20) turns[5] = { role: "user", content: "collapsed from a block list to a string" };
    }
    // Steady state: only the messages from the earliest moved cache marker on are parsed (a handful), not
    // the history; a message changed early (turn 21) parses from it on, and a new model (turn 45, before the
    // messages in the body) parses all. A new system prompt (turn 30, after them) parses no message again.
    const spikes = parsed.map((n, t) => [t, n]).filter(([, n]) => n > 8).map(([t]) => t);
    assert.deepEqual(spikes, [21, 45], `parsed per request: ${parsed.join(",")}`);
    assert.ok(parsed[30] <= 8 && parsed[59] <= 8);
    assert.ok(turns.length > 150);
  });

  it("a body it cannot read is one UnreadableRequest naming why", () => {
    const reader = new RequestReader();
    const cases: [Uint8Array, RegExp][] = [
      [enc("not json"), /not JSON/],
      [enc(`{"model":"m"}`), /no messages array/],
      [enc(`{"messages":"no"}`), /no messages array/],
      [new Uint8Array([0x7b, 0x22, 0x6d, 0x65, 0x73, 0x73, 0x61, 0x67, 0x65, 0x73, 0x22, 0x3a, 0x5b, 0x22, 0xff, 0x22, 0x5d, 0x7d]), /not UTF-8/],
      [enc(`{"messages":[{"role":"user","content":"a"}, {bad}]}`), /not JSON|no messages array/],
    ];
    for (const [bytes, why] of cases) assert.throws(() => reader.read("k", bytes), (e: unknown) => e instanceof UnreadableRequest && why.test(e.message));
    // A good body after bad ones still reads whole.
    same(reader, "k", JSON.stringify({ messages: [{ role: "user", content: "fine" }, 42, { role: "assistant", content: "ok" }] }));
  });

  it("remembers at most its byte bound", () => {
    const reader = new RequestReader(10_000, 2);
    for (let k = 0; k < 20; k++) same(reader, `k${k}`, claudeBody([{ role: "user", content: [{ type: "text", text: "x".repeat(1000) }] }]));
    assert.ok(reader.bytesHeld <= 10_000 + 2000, String(reader.bytesHeld));
  });

  it("commonPrefix compares natively across block boundaries", () => {
    const a = new Uint8Array(200_000).fill(7);
    const b = a.slice();
    assert.equal(commonPrefix(a, b), 200_000);
    b[131_073] = 8;
    assert.equal(commonPrefix(a, b), 131_073);
    assert.equal(commonPrefix(a, b.subarray(0, 10)), 10);
  });
});
