// Nothing forwarded unseen (docs/DESIGN.md "Nothing forwarded unseen"): a conversation-shaped request on
// a path the tap does not mirror is forwarded untouched, counted by path shape and reason in health (which
// stays ok), logged once per shape with no id of the path in it, and named by doctor; other requests are
// not counted. And what base-URL mode refuses to forward to AWS (docs/DESIGN.md "Bedrock's signatures"):
// a 400 in AWS's error shape naming proxy mode, one stderr line per reason, an events-log line and a count
// per request, and nothing sent anywhere.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { readEvents, startTestTap, type TestTap, withTap } from "../support/tap.ts";
import { cli } from "../support/recover.ts";
import type { Rec } from "../support/claude.ts";

const conversation = JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hello" }] });
const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-api-key": "sk-test", ...headers }, body });
const SECRET_PROJECT = "acme-secret-project-77";

describe("conversation-shaped requests the tap forwards without mirroring", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let health: Rec;

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    const sent = [
      await post(`${tap.url}/v2/messages`, conversation),
      await post(`${tap.url}/v2/messages?beta=true`, conversation),
      await post(`${tap.url}/v1/projects/${SECRET_PROJECT}/locations/x/publishers/google/models/gemini:streamGenerateContent`, conversation),
      // Not counted: a token count, a body with no messages array, a body that is not JSON, a GET.
      await post(`${tap.url}/v1/messages/count_tokens`, conversation),
      await post(`${tap.url}/v2/complete`, JSON.stringify({ prompt: "x", messages: "not an array" })),
      await post(`${tap.url}/v2/upload`, conversation, { "content-type": "text/plain" }),
      await fetch(`${tap.url}/v2/messages`),
    ];
    for (const r of sent) await r.arrayBuffer();
    await tap.settled();
    health = await (await fetch(`${tap.url}/_tap/health`)).json();
  });

  it("forwards every one of them untouched", () => {
    assert.equal(stub.requests.length, 7);
    assert.equal(Buffer.from(stub.requests[0].body).toString("utf8"), conversation);
    assert.equal(stub.requests[1].url, "/v2/messages?beta=true");
  });

  it("counts the conversation-shaped ones by path shape and reason; health stays ok", () => {
    assert.equal(health.status, "ok", JSON.stringify(health.problems));
    assert.equal(health.mirror.notMirrored.requests, 3);
    assert.deepEqual(health.mirror.notMirrored.shapes, [
      {
        shape: "/v2/messages",
        reason: "not a path the tap mirrors",
        requests: 2,
        refused: false,
        said: "2 requests to /v2/messages forwarded, not mirrored (not a path the tap mirrors)",
      },
      {
        shape: "/v1/projects/*/locations/*/publishers/*/models/*:streamGenerateContent",
        reason: "a Vertex model that is not Anthropic's",
        requests: 1,
        refused: false,
        said:
          "1 request to /v1/projects/*/locations/*/publishers/*/models/*:streamGenerateContent forwarded, not mirrored (a Vertex model that is not Anthropic's)",
      },
    ]);
    assert.equal(health.mirror.skipped, 0, "nothing the mirror tried to read");
    assert.equal(health.mirror.responses, 0);
  });

  it("logs each shape once, and never a path's ids or query", () => {
    const lines = readEvents(tap.root).filter((e) => e.action === "unmirrored");
    assert.deepEqual(lines.map((e) => e.shape), ["/v2/messages", "/v1/projects/*/locations/*/publishers/*/models/*:streamGenerateContent"]);
    const log = JSON.stringify(readEvents(tap.root));
    assert.ok(!log.includes(SECRET_PROJECT) && !log.includes("gemini") && !log.includes("beta=true"), log);
  });

  it("doctor names them as a warning, with the count and the shape", async () => {
    const out = await cli(["doctor", "--json", "--url", tap.url, "--mirror-dir", tap.root], {}, { home: "/nonexistent-home" });
    const checks = JSON.parse(out.stdout) as { check: string; status: string; detail: string }[];
    const named = checks.filter((c) => c.check === "not mirrored");
    assert.deepEqual(named.map((c) => c.status), ["warn", "warn"]);
    assert.match(named[0].detail, /^2 requests to \/v2\/messages forwarded, not mirrored \(not a path the tap mirrors\)/);
    assert.equal(checks.filter((c) => c.check.startsWith("tap ") && c.status === "fail").length, 0, "health problems: none");
  });
});

describe("requests base-URL mode cannot forward to AWS", () => {
  const signed = "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=deadbeef";
  const reached: string[] = [];
  let tap: TestTap;
  const bedrock = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream";

  before(async () => {
    // The upstream is AWS's own host; the injected fetch stands in for it and records every request that reaches it.
    tap = await startTestTap("https://bedrock-runtime.us-east-1.amazonaws.com", {}, {
      fetch: ((input: string | URL | Request) => {
        reached.push(String(input instanceof Request ? input.url : input));
        return Promise.resolve(new Response(JSON.stringify({ message: "stub" }), { status: 400, headers: { "content-type": "application/json" } }));
      }) as typeof fetch,
    });
  });

  after(async () => {
    await tap?.close();
  });

  it("a request signed for the tap's own address is answered 400 in AWS's error shape, naming proxy mode, not to be retried, and sent nowhere", async () => {
    for (let i = 0; i < 2; i++) {
      const r = await post(`${tap.url}${bedrock}`, conversation, { authorization: signed, "x-amz-date": "20260101T000000Z" });
      assert.equal(r.status, 400);
      assert.equal(r.headers.get("x-amzn-errortype"), "ValidationException");
      assert.equal(r.headers.get("x-should-retry"), "false");
      const body = await r.json();
      assert.equal(body.__type, "ValidationException");
      assert.match(body.message, /^sessiontap: this request is signed with AWS SigV4 for the tap's own address.*proxy mode \(HTTPS_PROXY\)/);
    }
    assert.deepEqual(reached, []);
  });

  it("a request with no credentials to AWS is refused the same way; a Bedrock API key goes through", async () => {
    const r = await post(`${tap.url}${bedrock}`, conversation);
    assert.equal(r.status, 400);
    assert.match((await r.json()).message, /carries no credentials and the upstream bedrock-runtime\.us-east-1\.amazonaws\.com is AWS/);
    assert.deepEqual(reached, []);
    const keyed = await post(`${tap.url}${bedrock}`, conversation, { authorization: "Bearer bedrock-api-key-EXAMPLE" });
    await keyed.arrayBuffer();
    assert.equal(keyed.status, 400, "the upstream's own answer");
    assert.deepEqual(reached, [`https://bedrock-runtime.us-east-1.amazonaws.com${bedrock}`]);
  });

  it("says each reason once on stderr, logs and counts every refusal; health stays ok; no credential is repeated", async () => {
    await tap.settled();
    const lines = tap.stderrLines.filter((l) => l.includes("refused"));
    assert.equal(lines.length, 2, lines.join("\n"));
    assert.match(lines[0], /^sessiontap: refused a request to \/model\/\*\/invoke-with-response-stream: .*proxy mode/);
    const refusals = readEvents(tap.root).filter((e) => e.action === "refuse");
    assert.deepEqual(refusals.map((e) => e.reason), ["signed for the tap's address", "signed for the tap's address", "no credentials for AWS"]);
    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.equal(health.status, "ok");
    assert.deepEqual(health.mirror.notMirrored.shapes.map((s: Record<string, unknown>) => [s.said, s.refused]), [
      ["2 requests to /model/*/invoke-with-response-stream refused, not forwarded (signed for the tap's address)", true],
      ["1 request to /model/*/invoke-with-response-stream refused, not forwarded (no credentials for AWS)", true],
    ]);
    const everything = JSON.stringify(readEvents(tap.root)) + tap.stderrLines.join("\n");
    for (const secret of ["AKIAEXAMPLE", "deadbeef", "bedrock-api-key-EXAMPLE", "claude-sonnet"]) assert.ok(!everything.includes(secret), secret);
  });
});
