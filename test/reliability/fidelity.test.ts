import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { sseEvent, type StubUpstream, textReply, toolUseReply } from "../support/stub-upstream.ts";
import { allRecords, readEvents, type TestTap, withTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";
import { CORPUS } from "../support/corpus.ts";

/** A deeply nested value: `depth` levels of objects and arrays. */
function nested(depth: number): unknown {
  let v: unknown = "bottom";
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { level: i, inner: v } : [i, v];
  return v;
}

describe("content fidelity: what goes in comes back exactly", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  withTap((started) => ({ stub, tap } = started));

  for (const [name, text] of Object.entries(CORPUS)) {
    it(`${name}: the user's text and the streamed answer round-trip`, async () => {
      const session = `fidelity-${name.replace(/[^a-z]/g, "-")}`;
      stub.enqueue({ kind: "sse", chunks: textReply(`echo: ${text}`, { deltas: 7 }) });
      const c = new Conversation(tap, session);
      assert.equal((await c.say([{ type: "text", text }])).status, 200);
      const [user, assistant] = allRecords(`${tap.root}/${session}`);
      assert.deepEqual((user.message as { content: unknown }).content, [{ type: "text", text }]);
      assert.deepEqual((assistant.message as { content: unknown }).content, [{ type: "text", text: `echo: ${text}` }]);
    });
  }

  it("a 10 MiB tool result round-trips, once", { timeout: 60_000 }, async () => {
    const big = "0123456789abcdef\r\n🦀".repeat(Math.ceil((10 * 1024 * 1024) / 20));
    const c = new Conversation(tap, "fidelity-big");
    await c.say("RUNTOOL please");
    const toolUse = (c.messages[1].content as { type: string; id: string }[]).find((b) => b.type === "tool_use")!;
    assert.equal((await c.say([{ type: "tool_result", tool_use_id: toolUse.id, content: big }])).status, 200);
    await c.say("and again");
    const results = allRecords(`${tap.root}/fidelity-big`).filter((r) => JSON.stringify(r).includes("0123456789abcdef"));
    assert.equal(results.length, 1, "stored once although re-sent");
    assert.equal((results[0].message as { content: { content: string }[] }).content[0].content, big);
  });

  it("deeply nested JSON in a streamed tool input round-trips (1,000 levels)", async () => {
    const input = { deep: nested(1000) };
    stub.enqueue({ kind: "sse", chunks: toolUseReply("Bash", input, { preText: "nesting" }) });
    const c = new Conversation(tap, "fidelity-nested");
    await c.say("nest");
    await c.say("again"); // re-sent: must hash the same and not be stored twice
    const assistants = allRecords(`${tap.root}/fidelity-nested`).filter((r) => r.type === "assistant");
    assert.equal(assistants.length, 2);
    const block = (assistants[0].message as { content: { type: string; input?: unknown }[] }).content.find((b) => b.type === "tool_use")!;
    assert.deepEqual(block.input, input);
  });

  it("a request body that is not JSON is forwarded untouched and skipped with an events-log line", async () => {
    const body = new TextEncoder().encode('{"messages": [ not json');
    stub.enqueue({ kind: "json", status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "bad json" } } });
    const r = await fetch(`${tap.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body });
    assert.equal(r.status, 400);
    await r.arrayBuffer();
    assert.deepEqual(stub.requests.at(-1)!.body, body);
    await tap.engine!.query("mirror.flush", 2000); // the events log is written after the response
    assert.ok(readEvents(tap.root).some((e) => e.action === "skip" && e.reason === "request body is not JSON"));
  });

  it("a request body that is not UTF-8 is forwarded untouched and skipped with an events-log line", async () => {
    const body = new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x80, 0x22, 0x7d]);
    stub.enqueue({ kind: "sse", chunks: [sseEvent("ping", { type: "ping" })] });
    const r = await fetch(`${tap.url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json" }, body });
    await r.arrayBuffer();
    assert.deepEqual(stub.requests.at(-1)!.body, body);
    await tap.engine!.query("mirror.flush", 2000); // the events log is written after the response
    assert.ok(readEvents(tap.root).some((e) => e.action === "skip" && e.reason === "request body is not UTF-8"));
  });
});
