// Vertex and Bedrock through a real tap in this process (docs/DESIGN.md "Providers"), against the stub
// upstream answering at their paths: every byte of a Bedrock event stream reaches the client as the
// upstream sent it, split anywhere, broken or not; a whole answer is mirrored once, an answer whose frames
// break (a wrong checksum, a wrong length, the stream ending inside a frame) or that ends in an exception
// is kept as an interrupted answer with one events-log line, never as a whole one, and the client's retry
// is mirrored once; Vertex's and Bedrock's JSON answers are mirrored, and one that names no model takes
// the path's.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { type Reply, type StubUpstream } from "../support/stub-upstream.ts";
import { readEvents, type TestTap, withTap } from "../support/tap.ts";
import { BASH_TOOL } from "../support/client.ts";
import { messageJson, textReply } from "../support/sse-build.ts";
import { concatBytes, exceptionFrame, framesOfSse, withBadCrc, withBadLength } from "../support/eventstream-build.ts";
import { sessionMirror } from "../support/claude.ts";

// Bedrock sends no request-id (the stub would add its own; an empty one is none, to Claude Code as to the tap).
const EVENTSTREAM = { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "amzn-req-1", "request-id": "" };
const MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const STREAM_PATH = `/model/${encodeURIComponent(MODEL)}/invoke-with-response-stream`;
const INVOKE_PATH = `/model/${encodeURIComponent(MODEL)}/invoke`;
const VERTEX_PATH = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929";

/** Sends one Bedrock-shaped turn (no model, no stream in the body) and reads every byte of the answer. */
async function turn(tap: TestTap, path: string, session: string, prompt: string): Promise<{ status: number; bytes: Uint8Array }> {
  const body = { anthropic_version: "bedrock-2023-05-31", max_tokens: 100, tools: [BASH_TOOL], messages: [{ role: "user", content: prompt }] };
  const r = await fetch(`${tap.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-claude-code-session-id": session, "user-agent": "claude-cli/2.1.332 (external, cli)" },
    body: JSON.stringify(body),
  });
  const bytes = new Uint8Array(await r.arrayBuffer());
  await tap.settled();
  return { status: r.status, bytes };
}

/** Pieces of `bytes` of `size` bytes each, so frames straddle the upstream's writes. */
const pieces = (bytes: Uint8Array, size: number) => Array.from({ length: Math.ceil(bytes.byteLength / size) }, (_, i) => bytes.slice(i * size, (i + 1) * size));
const assistants = (root: string, session: string) => sessionMirror(root, session).filter((r) => r.type === "assistant");
const users = (root: string, session: string) => sessionMirror(root, session).filter((r) => r.type === "user");

describe("Bedrock's event stream through the tap", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  const frames = framesOfSse(textReply("Hello from Bedrock", { id: "msg_es_whole", model: "claude-sonnet-4-5-20250929", deltas: 4 }).join(""));
  const whole = concatBytes(frames);

  withTap((started) => ({ stub, tap } = started));

  it("passes every byte through, split at odd places, and mirrors the answer once, with AWS's request id", async () => {
    stub.enqueue({ kind: "sse", chunks: pieces(whole, 13), headers: EVENTSTREAM });
    const got = await turn(tap, STREAM_PATH, "es-whole", "say hello");
    assert.equal(got.status, 200);
    assert.deepEqual(got.bytes, whole);
    const [answer] = assistants(tap.root, "es-whole");
    assert.deepEqual(answer.message.content, [{ type: "text", text: "Hello from Bedrock" }]);
    assert.equal(answer.message.model, "claude-sonnet-4-5-20250929", "the answer's own model, as Claude Code records it");
    assert.equal(answer.message.stop_reason, "end_turn");
    assert.equal(answer.requestId, "amzn-req-1");
    const body = JSON.parse(Buffer.from(stub.requests.at(-1)!.body).toString("utf8"));
    assert.equal(body.anthropic_version, "bedrock-2023-05-31", "the request went upstream as it was");
  });

  const stop = frames.length - 1; // message_stop's frame, after message_delta carried the stop_reason
  const faults: { name: string; bytes: Uint8Array; line: RegExp | null; afterDelta?: true }[] = [
    {
      name: "a frame with a wrong checksum",
      bytes: concatBytes([...frames.slice(0, 4), withBadCrc(frames[4]), ...frames.slice(5)]),
      line: /^frame 5 does not decode/,
    },
    { name: "a frame with a wrong length", bytes: concatBytes([...frames.slice(0, 4), withBadLength(frames[4]), ...frames.slice(5)]), line: /^frame 5 / },
    {
      name: "a stream that ends inside a frame",
      bytes: concatBytes([...frames.slice(0, 4), frames[4].slice(0, 20)]),
      line: /^the stream ended inside a frame/,
    },
    { name: "an exception frame", bytes: concatBytes([...frames.slice(0, 4), exceptionFrame("modelStreamErrorException", "The model stopped")]), line: null },
    {
      name: "message_stop's frame with a wrong checksum",
      bytes: concatBytes([...frames.slice(0, stop), withBadCrc(frames[stop])]),
      line: new RegExp(`^frame ${stop + 1} does not decode`),
      afterDelta: true,
    },
    {
      name: "a stream that ends inside message_stop's frame",
      bytes: concatBytes([...frames.slice(0, stop), frames[stop].slice(0, 20)]),
      line: /^the stream ended inside a frame/,
      afterDelta: true,
    },
  ];
  for (const [i, fault] of faults.entries()) {
    it(`${fault.name}: the client gets what the upstream sent, one events-log line, an interrupted answer, and the retry once`, async () => {
      const session = `es-fault-${i}`;
      const before = readEvents(tap.root).length;
      stub.enqueue({ kind: "sse", chunks: pieces(fault.bytes, 29), headers: EVENTSTREAM });
      const got = await turn(tap, STREAM_PATH, session, "say hello");
      assert.equal(got.status, 200);
      assert.deepEqual(got.bytes, fault.bytes, "byte for byte what the upstream sent");
      const events = readEvents(tap.root).slice(before);
      const broken = events.filter((e) => e.action === "broken-frame");
      if (fault.line === null) assert.equal(broken.length, 0, "an exception is well framed");
      else {
        assert.equal(broken.length, 1, JSON.stringify(events));
        assert.match(String(broken[0].reason), fault.line);
      }
      assert.deepEqual(events.filter((e) => e.action === "append").map((e) => e.kind), ["upstream-cut"], "one commit, of a cut answer");
      const [cut] = assistants(tap.root, session);
      assert.equal(cut.message.stop_reason, "interrupted", "never passed off as whole");
      const text = String(cut.message.content[0]?.text);
      // After message_delta the text is all there, and still not whole: Claude Code's own decoder fails the turn on the frame.
      if (fault.afterDelta) assert.equal(text, "Hello from Bedrock");
      else assert.ok("Hello from Bedrock".startsWith(text) && text !== "Hello from Bedrock", `a part of the answer: ${JSON.stringify(cut.message.content)}`);
      // Claude Code asks again without streaming: the retry's answer is its own record; the prompt stays once.
      stub.enqueue({
        kind: "json",
        status: 200,
        body: messageJson(`msg_retry_${i}`, "claude-sonnet-4-5-20250929", [{ type: "text", text: "Hello again" }], "end_turn"),
      });
      assert.equal((await turn(tap, INVOKE_PATH, session, "say hello")).status, 200);
      assert.deepEqual(assistants(tap.root, session).map((r) => [r.message.id, r.message.stop_reason]), [["msg_es_whole", "interrupted"], [
        `msg_retry_${i}`,
        "end_turn",
      ]]);
      assert.equal(users(tap.root, session).length, 1);
    });
  }

  it("health stays ok through all of it: a broken answer is the upstream's, not the tap's", async () => {
    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.equal(health.status, "ok", JSON.stringify(health.problems));
    assert.equal(health.mirror.errors, 0);
    assert.equal(health.mirror.interrupted, faults.length);
  });
});

describe("JSON answers on Vertex and Bedrock", () => {
  let stub: StubUpstream;
  let tap: TestTap;

  withTap((started) => ({ stub, tap } = started));

  const cases: [string, string, Reply][] = [
    ["Vertex :rawPredict", `${VERTEX_PATH}:rawPredict`, {
      kind: "json",
      status: 200,
      body: messageJson("msg_v_json", "claude-sonnet-4-5-20250929", [{ type: "text", text: "v" }], "end_turn"),
    }],
    ["Bedrock /invoke", INVOKE_PATH, {
      kind: "json",
      status: 200,
      body: messageJson("msg_b_json", "claude-sonnet-4-5-20250929", [{ type: "text", text: "b" }], "end_turn"),
    }],
  ];
  for (const [name, path, reply] of cases) {
    it(`${name} is mirrored like a Messages API answer`, async () => {
      stub.enqueue(reply);
      const session = `json-${name.replace(/\W/g, "")}`;
      assert.equal((await turn(tap, path, session, "hi")).status, 200);
      const [answer] = assistants(tap.root, session);
      assert.equal(answer.message.stop_reason, "end_turn");
      assert.equal(answer.message.model, "claude-sonnet-4-5-20250929");
    });
  }

  it("an answer that names no model takes the one the path names (the body has none)", async () => {
    const body = messageJson("msg_no_model", "x", [{ type: "text", text: "nameless" }], "end_turn");
    delete body.model;
    stub.enqueue({ kind: "json", status: 200, body });
    assert.equal((await turn(tap, `${VERTEX_PATH}:rawPredict`, "no-model", "hi")).status, 200);
    assert.equal(assistants(tap.root, "no-model")[0].message.model, "claude-sonnet-4-5@20250929");
    const frames = framesOfSse(textReply("nameless too", { id: "msg_no_model_2" }).join("").replace(/"model":"[^"]*",?/, ""));
    stub.enqueue({ kind: "sse", chunks: [concatBytes(frames)], headers: EVENTSTREAM });
    assert.equal((await turn(tap, STREAM_PATH, "no-model-2", "hi")).status, 200);
    assert.equal(assistants(tap.root, "no-model-2")[0].message.model, MODEL);
  });

  it("a Google bearer token goes upstream untouched and is never written or logged; Bedrock's control plane is forwarded as it is", async () => {
    const token = "ya29.a0AfB_SECRET-google-token";
    stub.enqueue({ kind: "sse", chunks: textReply("with a token", { id: "msg_token" }) });
    const r = await fetch(`${tap.url}${VERTEX_PATH}:streamRawPredict`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}`, "x-claude-code-session-id": "google-token" },
      body: JSON.stringify({
        anthropic_version: "vertex-2023-10-16",
        stream: true,
        max_tokens: 5,
        tools: [BASH_TOOL],
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    await r.arrayBuffer();
    await tap.settled();
    assert.equal(stub.requests.at(-1)!.headers.authorization, `Bearer ${token}`);
    assert.equal(assistants(tap.root, "google-token").length, 1);
    stub.enqueue({ kind: "json", status: 200, body: { inferenceProfileSummaries: [] } });
    const profiles = await fetch(`${tap.url}/inference-profiles?type=SYSTEM_DEFINED`, { headers: { authorization: `Bearer ${token}` } });
    assert.deepEqual(await profiles.json(), { inferenceProfileSummaries: [] });
    assert.equal(stub.requests.at(-1)!.url, "/inference-profiles?type=SYSTEM_DEFINED");
    const written = JSON.stringify(readEvents(tap.root)) + JSON.stringify(sessionMirror(tap.root, "google-token"));
    assert.ok(!written.includes("SECRET-google-token"), "the token is in no file the tap writes");
  });

  it("Vertex and Bedrock token counts are forwarded and neither mirrored nor counted unseen", async () => {
    for (const path of [`${VERTEX_PATH.replace(/models\/.*/, "models/count-tokens")}:rawPredict`, `/model/${encodeURIComponent(MODEL)}/count-tokens`]) {
      stub.enqueue({ kind: "json", status: 200, body: { input_tokens: 3 } });
      assert.equal((await turn(tap, path, "counting", "hi")).status, 200);
    }
    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.equal(health.mirror.notMirrored.requests, 0);
    assert.deepEqual(sessionMirror(tap.root, "counting"), []);
  });
});
