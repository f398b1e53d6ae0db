// AWS's signatures through proxy mode (docs/DESIGN.md "Bedrock's signatures"): a request decrypted for
// bedrock-runtime.REGION.amazonaws.com was addressed to that host, so the signature Claude Code made for it
// is valid there and the tap forwards it, where base-URL mode refuses it. SigV4 covers the Host, the path
// and query, the body and each header SignedHeaders names, so each reaches the upstream as the client sent
// it — a signed accept-encoding too, which the tap otherwise narrows, with the answer's coding then labelled
// as the client gets it. The stub's side is checked with AWS's own signer (test/support/sigv4.ts), and that
// check is shown to catch a request changed on the way. A real in-process tap, its proxy and CA on disk.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as zlib from "node:zlib";
import { Incoming, readResponse, sendRequest, tlsThrough } from "../support/proxy-client.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { type ProxyTap, startProxyTap } from "../support/proxy-tap.ts";
import { concatBytes, framesOfSse } from "../support/eventstream-build.ts";
import { textReply } from "../support/sse-build.ts";
import { sessionMirror } from "../support/claude.ts";
import { BASH_TOOL } from "../support/client.ts";
import { type ReceivedRequest, signLikeClaudeCode, sigV4Problem } from "../support/sigv4.ts";

const BEDROCK = "bedrock-runtime.us-east-1.amazonaws.com";
/** A model id as the SDK puts it in a path (its colon percent-encoded), and a query: both signed, both kept. */
const TARGET = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream?trace=a%2Fb&x=1";
const zstd = zlib as unknown as { zstdCompressSync(b: Uint8Array): Uint8Array; zstdDecompressSync(b: Uint8Array): Uint8Array };

/** A Bedrock turn's body (no model, no stream: both are the path's), with the agent's tools, as the main conversation has them. */
const turnBody = (prompt: string) =>
  JSON.stringify({ anthropic_version: "bedrock-2023-05-31", max_tokens: 64, tools: [BASH_TOOL], messages: [{ role: "user", content: prompt }] });

/** The headers Claude Code's Bedrock client signs (test/e2e/claude-providers.test.ts shows them), for `session`. */
const claudeHeaders = (session: string, extra: Record<string, string> = {}) => ({
  accept: "application/json",
  "anthropic-version": "2023-06-01",
  "content-type": "application/json",
  "x-app": "cli",
  "x-claude-code-session-id": session,
  "x-stainless-retry-count": "0",
  ...extra,
});

/** Sends one request through the proxy to the Bedrock host and reads its answer. */
async function send(tap: ProxyTap, method: string, target: string, headers: Record<string, string>, body: string) {
  const socket = await tlsThrough(tap.proxyPort, BEDROCK, 443, tap.caPem);
  sendRequest(socket, method, target, { host: BEDROCK, ...headers }, body);
  const answer = await readResponse(new Incoming(socket));
  socket.destroy();
  return answer;
}

describe("proxy mode: a request signed with AWS SigV4 for Bedrock's own host", { timeout: 60_000 }, () => {
  let stub: StubUpstream;
  let tap: ProxyTap;

  before(async () => {
    stub = await startStub();
    tap = await startProxyTap(stub.url, [BEDROCK]);
  });

  after(async () => {
    await tap?.close();
    await stub?.close();
  });

  it("is forwarded with its signature valid (path, query, body and signed headers as they were signed), and mirrored", async () => {
    const whole = concatBytes(framesOfSse(textReply("Hello, signed", { id: "msg_signed", model: "claude-sonnet-4-5-20250929" }).join("")));
    stub.enqueue({
      kind: "raw",
      status: 200,
      body: whole,
      headers: { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "amzn-signed" },
    });
    const body = turnBody("signed hello");
    const seen = stub.requests.length;
    const answer = await send(tap, "POST", TARGET, await signLikeClaudeCode("POST", BEDROCK, TARGET, claudeHeaders("signed-1"), body), body);
    assert.equal(answer.status, 200, answer.body.toString("utf8"));
    assert.deepEqual(new Uint8Array(answer.body), whole, "the event stream byte for byte");
    const got = stub.requests[seen];
    assert.equal(got.url, TARGET, "the path and query as the client sent them");
    assert.equal(await sigV4Problem(got, BEDROCK), null);
    assert.equal(tap.stderrLines.filter((l) => /refused/.test(l)).length, 0, tap.stderrLines.join("\n"));
    await tap.settled();
    const records = sessionMirror(tap.root, "signed-1");
    assert.deepEqual(records.map((r) => r.type), ["user", "assistant"]);
    assert.deepEqual(records[1].message.content, [{ type: "text", text: "Hello, signed" }]);
    assert.equal(records[1].requestId, "amzn-signed");
  });

  it("a signed accept-encoding goes as it was signed, and an answer in a coding it names reaches the client labelled truthfully", async () => {
    const json = JSON.stringify({ id: "msg_zstd", type: "message", role: "assistant", model: "m", content: [{ type: "text", text: "zstd" }] });
    // Bun's fetch decodes zstd and Deno's does not (docs/RUNTIMES.md "Encoding and headers"): either way the
    // body the client gets must be what its content-encoding says it is.
    stub.enqueue({
      kind: "raw",
      status: 200,
      body: zstd.zstdCompressSync(Buffer.from(json)),
      headers: { "content-type": "application/json", "content-encoding": "zstd" },
    });
    const target = "/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke";
    const body = turnBody("zstd please");
    const headers = await signLikeClaudeCode("POST", BEDROCK, target, claudeHeaders("signed-zstd", { "accept-encoding": "zstd" }), body);
    assert.match(headers.authorization, /SignedHeaders=accept;accept-encoding;/);
    const seen = stub.requests.length;
    const answer = await send(tap, "POST", target, headers, body);
    const got = stub.requests[seen];
    assert.equal(got.headers["accept-encoding"], "zstd", "not narrowed: it is signed");
    assert.equal(await sigV4Problem(got, BEDROCK), null);
    assert.equal(answer.status, 200);
    const label = answer.headers["content-encoding"];
    assert.ok(label === undefined || label === "zstd", `labelled ${label}`);
    const text = Buffer.from(label === "zstd" ? zstd.zstdDecompressSync(answer.body) : answer.body).toString("utf8");
    assert.equal(text, json);
  });

  it("one with no credentials is forwarded as it is (AWS answers it), where base-URL mode refuses it", async () => {
    stub.enqueue({ kind: "json", status: 403, body: { message: "Missing Authentication Token" } });
    const seen = stub.requests.length;
    const answer = await send(tap, "POST", "/model/anthropic.claude-x/invoke", claudeHeaders("unsigned"), turnBody("no keys"));
    assert.equal(answer.status, 403);
    assert.match(answer.body.toString("utf8"), /Missing Authentication Token/, "AWS's own answer");
    assert.equal(stub.requests.length, seen + 1);
    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.deepEqual(health.mirror.notMirrored, { requests: 0, shapes: [] }, "nothing refused");
  });

  it("the stub's check catches a request changed on the way: a signed header, the body, the path or the host", async () => {
    const body = turnBody("tamper");
    const headers = await signLikeClaudeCode("POST", BEDROCK, TARGET, claudeHeaders("tamper"), body);
    const received: ReceivedRequest = { method: "POST", url: TARGET, headers: { ...headers, host: "127.0.0.1:1" }, body: Buffer.from(body) };
    assert.equal(await sigV4Problem(received, BEDROCK), null, "unchanged, it holds");
    const changes: [string, ReceivedRequest, string][] = [
      ["a signed header", { ...received, headers: { ...received.headers, "x-app": "other" } }, BEDROCK],
      ["the body", { ...received, body: Buffer.from(turnBody("tampered")) }, BEDROCK],
      ["the body and its hash", {
        ...received,
        body: Buffer.from(""),
        headers: { ...received.headers, "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
      }, BEDROCK],
      ["the path's encoding", { ...received, url: TARGET.replace("%3A", ":") }, BEDROCK],
      ["the query", { ...received, url: TARGET.replace("x=1", "x=2") }, BEDROCK],
      ["the host", received, "bedrock-runtime.us-west-2.amazonaws.com"],
    ];
    for (const [what, changed, host] of changes) assert.notEqual(await sigV4Problem(changed, host), null, what);
  });
});
