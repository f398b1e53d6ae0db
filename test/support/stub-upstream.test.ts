// Self-test of the stub upstream and its SSE recordings (runs under `bun test` and `deno test`).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { fixtureNames, loadFixture, startStub, type StubUpstream, textReply } from "./stub-upstream.ts";

/** Parses a whole SSE text into events, failing on any parser error. */
function parseSse(text: string): EventSourceMessage[] {
  const events: EventSourceMessage[] = [];
  const parser = createParser({
    onEvent: (e) => events.push(e),
    onError: (err) => assert.fail(`SSE parse error: ${err.message}`),
  });
  parser.feed(text);
  return events;
}

/** POSTs a Messages API body to the stub. */
function post(stub: StubUpstream, path: string, body: unknown): Promise<Response> {
  return fetch(stub.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "test" },
    body: JSON.stringify(body),
  });
}

/** Content blocks of a streamed reply, rebuilt from its SSE events. */
function blocksOf(events: EventSourceMessage[]): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  for (const e of events) {
    const d = JSON.parse(e.data);
    if (d.type === "content_block_start") blocks[d.index] = { ...d.content_block, _json: "" };
    if (d.type === "content_block_delta" && d.delta.type === "text_delta") blocks[d.index].text += d.delta.text;
    if (d.type === "content_block_delta" && d.delta.type === "input_json_delta") blocks[d.index]._json += d.delta.partial_json;
  }
  return blocks;
}

describe("stub upstream", () => {
  let stub: StubUpstream;
  before(async () => {
    stub = await startStub();
  });
  after(async () => {
    await stub.close();
  });

  it("sends an enqueued sse reply byte-identical, with SSE headers", async () => {
    const chunks: (string | Uint8Array)[] = [
      ...textReply("héllo wörld", { id: "msg_x", deltas: 4 }),
      new Uint8Array([0x3a, 0x20, 0x65, 0x6e, 0x64, 0x0a, 0x0a]),
    ];
    stub.enqueue({ kind: "sse", chunks, delayMs: [0, 5] });
    const res = await post(stub, "/v1/messages", { stream: true });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    assert.equal(res.headers.get("cache-control"), "no-cache");
    assert.match(res.headers.get("request-id") ?? "", /^req_stub_\d+$/);
    const got = new Uint8Array(await res.arrayBuffer());
    const want = Buffer.concat(chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c)));
    assert.deepEqual(Buffer.from(got), want);
  });

  it("conversation mode: tool_use for RUNTOOL, then text after the tool_result", async () => {
    const model = "claude-opus-test";
    const first = [
      { role: "user", content: [{ type: "text", text: "<system-reminder>x</system-reminder>" }, { type: "text", text: "RUNTOOL please" }] },
      { role: "system", content: "environment details" },
    ];
    const r1 = await post(stub, "/v1/messages?beta=true", { model, stream: true, max_tokens: 1024, messages: first });
    const n1 = Number(r1.headers.get("request-id")!.slice("req_stub_".length));
    const ev1 = parseSse(await r1.text());
    const start = JSON.parse(ev1[0].data);
    assert.equal(start.message.id, `msg_stub_${n1}`);
    assert.equal(start.message.model, model);
    const [text, tool] = blocksOf(ev1);
    assert.equal(text.text, "I'll run it.");
    assert.equal(tool.type, "tool_use");
    assert.equal(tool.name, "Bash");
    assert.equal(tool.id, `toolu_stub_${n1}`);
    assert.deepEqual(JSON.parse(tool._json as string), { command: "echo hi-from-tool", description: "Say hi" });
    const delta = ev1.map((e) => JSON.parse(e.data)).find((d) => d.type === "message_delta");
    assert.equal(delta.delta.stop_reason, "tool_use");
    assert.equal(delta.usage.input_tokens, 100);
    assert.equal(delta.usage.cache_read_input_tokens, 50);
    assert.equal(delta.usage.output_tokens, 10);

    const second = [
      ...first,
      { role: "assistant", content: [{ type: "text", text: "I'll run it." }, { type: "tool_use", id: tool.id, name: "Bash", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: tool.id, content: "hi-from-tool RUNTOOL" }] },
    ];
    const r2 = await post(stub, "/v1/messages?beta=true", { model, stream: true, messages: second });
    const n2 = Number(r2.headers.get("request-id")!.slice("req_stub_".length));
    assert.equal(n2, n1 + 1);
    const blocks2 = blocksOf(parseSse(await r2.text()));
    assert.deepEqual(blocks2.map((b) => [b.type, b.text]), [["text", `Done (reply ${n2}).`]]);

    const r3 = await post(stub, "/v1/messages", { model, max_tokens: 1, messages: [{ role: "user", content: "quota" }] });
    assert.equal(r3.headers.get("content-type"), "application/json");
    const m3 = await r3.json();
    assert.equal(m3.type, "message");
    assert.equal(m3.stop_reason, "end_turn");
    assert.equal(m3.content[0].text, `Done (reply ${n2 + 1}).`);

    const ct = await post(stub, "/v1/messages/count_tokens?beta=true", { model, messages: first });
    assert.deepEqual(await ct.json(), { input_tokens: 42 });
    const nf = await fetch(`${stub.url}/v1/nope`);
    assert.equal(nf.status, 404);
    const err = await nf.json();
    assert.equal(err.type, "error");
    assert.equal(err.error.type, "not_found_error");
  });

  it("conversation mode with summaries: a summarising request gets <analysis> and <summary>; others are unchanged", async () => {
    const critical = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.";
    const messages = [{ role: "user", content: [{ type: "text", text: "RUNTOOL please" }, { type: "text", text: critical }] }];
    stub.enqueue({ kind: "conversation", summaries: true }, { kind: "conversation", summaries: true }, { kind: "conversation" });
    const texts: string[] = [];
    for (const body of [messages, [{ role: "user", content: "plain" }], messages]) {
      const r = await post(stub, "/v1/messages", { model: "m", stream: true, messages: body });
      const n = Number(r.headers.get("request-id")!.slice("req_stub_".length));
      texts.push(blocksOf(parseSse(await r.text())).map((b) => `${b.type}:${b.text}`).join(",").replace(String(n), "N"));
    }
    assert.deepEqual(texts, [
      "text:<analysis>Stub analysis.</analysis>\n<summary>Stub summary (reply N).</summary>",
      "text:Done (reply N).",
      "text:I'll run it.,tool_use:undefined",
    ]);
  });

  it("sends gzip-compressed JSON and SSE", async () => {
    stub.enqueue({ kind: "json", status: 529, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, gzip: true });
    const res = await post(stub, "/v1/messages", {});
    assert.equal(res.status, 529);
    assert.equal(res.headers.get("content-encoding"), "gzip");
    assert.deepEqual(await res.json(), { type: "error", error: { type: "overloaded_error", message: "Overloaded" } });

    const chunks = textReply("zipped");
    stub.enqueue({ kind: "sse", chunks, gzip: true });
    const res2 = await post(stub, "/v1/messages", {});
    assert.equal(res2.headers.get("content-encoding"), "gzip");
    assert.equal(await res2.text(), chunks.join(""));
  });

  it("reset-after makes the client's body read fail", async () => {
    stub.enqueue({ kind: "reset-after", chunks: textReply("cut").slice(0, 3) });
    const res = await post(stub, "/v1/messages", {});
    assert.equal(res.status, 200);
    await assert.rejects(res.text());
  });

  it("stall-after records the client abort", async () => {
    stub.enqueue({ kind: "stall-after", chunks: textReply("stalled").slice(0, 2) });
    const ac = new AbortController();
    const res = await fetch(`${stub.url}/v1/messages`, { method: "POST", body: "{}", signal: ac.signal });
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.ok(first.value && first.value.byteLength > 0);
    const rec = stub.requests.at(-1)!;
    ac.abort();
    await reader.read().catch(() => undefined);
    await rec.closed;
    assert.equal(rec.aborted, true);
  });
});

describe("stub upstream nextRequest", () => {
  let stub: StubUpstream;
  before(async () => {
    stub = await startStub();
  });
  after(async () => {
    await stub.close();
  });

  it("nextRequest resolves for a request already received and for one still to come", async () => {
    const pending = stub.nextRequest();
    const res = await post(stub, "/v1/messages?x=1", { hello: "world" });
    await res.arrayBuffer();
    const rec = await pending;
    assert.equal(rec.method, "POST");
    assert.equal(rec.url, "/v1/messages?x=1");
    assert.equal(rec.headers["x-api-key"], "test");
    assert.deepEqual(JSON.parse(Buffer.from(rec.body).toString("utf8")), { hello: "world" });
    await rec.closed;
    assert.equal(rec.aborted, false);

    await (await post(stub, "/v1/messages", { again: true })).arrayBuffer();
    const rec2 = await stub.nextRequest();
    assert.deepEqual(JSON.parse(Buffer.from(rec2.body).toString("utf8")), { again: true });
    assert.equal(stub.requests.at(-1), rec2);
  });
});

describe("SSE recordings", () => {
  const names = fixtureNames();

  it("include the reference captures and the hand-written ones", () => {
    for (
      const n of [
        "ts_basic_response",
        "ts_tool_use_response",
        "ts_incomplete_partial_json_response",
        "thinking_text",
        "redacted_thinking",
        "server_tool",
        "unknown_types",
        "error_midstream",
        "usage_delta",
        "multiline_data",
        "long_text",
      ]
    ) {
      assert.ok(names.includes(n), `missing fixture ${n}`);
    }
  });

  for (const name of names) {
    it(`${name}.sse parses: every data is JSON with type equal to the event name`, () => {
      const events = parseSse(loadFixture(name));
      assert.ok(events.length > 0);
      for (const e of events) {
        assert.ok(e.event, `${name}: event without a name`);
        const data = JSON.parse(e.data);
        assert.equal(data.type, e.event, `${name}: data.type ${data.type} != event ${e.event}`);
      }
      if (name === "long_text") {
        assert.ok(events.filter((e) => JSON.parse(e.data).delta?.type === "text_delta").length >= 300);
      }
      if (name === "multiline_data") assert.ok(events.some((e) => e.data.includes("\n")));
    });
  }
});
