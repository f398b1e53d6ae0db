// Non-SSE replies through the tap (SPEC §3): JSON and error replies (status, body, retry-after) unchanged,
// encodings fixed to match a decoded body, bodiless replies, and any method, path and query forwarded.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { request as httpRequest } from "node:http";
import { loadFixture, type StubUpstream } from "../support/stub-upstream.ts";
import { messageJson } from "../support/sse-build.ts";
import { startTestTap, type TestTap, withTap } from "../support/tap.ts";

const utf8 = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

/** Sends `init` through the tap and returns status, headers and the exact body bytes. */
async function through(tap: TestTap, path: string, init: RequestInit = {}) {
  const res = await fetch(tap.url + path, init);
  return { status: res.status, headers: res.headers, body: new Uint8Array(await res.arrayBuffer()) };
}

/** A request with node:http, which never decodes a body: what the client really got on the wire. */
function rawRequest(
  url: string,
  headers: Record<string, string> = { "accept-encoding": "gzip" },
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

const post = (
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): RequestInit => ({ method: "POST", headers: { "content-type": "application/json", "x-api-key": "sk-test", ...headers }, body } as RequestInit);

describe("passthrough: replies", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  withTap((started) => ({ stub, tap } = started));

  it("a JSON reply arrives byte-identical with its headers", async () => {
    const body = `{"id":"msg_1","type":"message","content":[{"type":"text","text":"héllo ✓ 🎉"}],  "spacing" : [ 1,2 ]}`;
    stub.enqueue({
      kind: "raw",
      status: 200,
      body,
      headers: { "content-type": "application/json", "request-id": "req_json_1", "anthropic-organization-id": "org-x" },
    });
    const got = await through(tap, "/v1/messages", post("{}"));
    assert.equal(got.status, 200);
    assert.ok(same(got.body, utf8(body)));
    assert.equal(got.headers.get("content-type"), "application/json");
    assert.equal(got.headers.get("request-id"), "req_json_1");
    assert.equal(got.headers.get("anthropic-organization-id"), "org-x");
  });

  for (const status of [400, 401, 403, 404, 413, 429, 500, 503, 529]) {
    it(`a ${status} with retry-after passes through unchanged`, async () => {
      const body = `{"type":"error","error":{"type":"e${status}","message":"upstream said ${status}"}}`;
      stub.enqueue({
        kind: "raw",
        status,
        body,
        headers: { "content-type": "application/json", "retry-after": "17", "request-id": `req_err_${status}`, "x-should-retry": "true" },
      });
      const got = await through(tap, "/v1/messages?beta=true", post("{}"));
      assert.equal(got.status, status);
      assert.ok(same(got.body, utf8(body)), `body of ${status}`);
      assert.equal(got.headers.get("retry-after"), "17");
      assert.equal(got.headers.get("request-id"), `req_err_${status}`);
      assert.equal(got.headers.get("x-should-retry"), "true");
    });
  }

  it("a gzip JSON reply reaches the client decoded, with no content-encoding and no stale length", async () => {
    const body = { type: "message", content: [{ type: "text", text: "zipped ".repeat(200) }] };
    stub.enqueue({ kind: "json", status: 200, body, gzip: true });
    const got = await rawRequest(tap.url + "/v1/messages");
    assert.equal(got.status, 200);
    assert.equal(got.headers["content-encoding"], undefined);
    const length = got.headers["content-length"];
    assert.ok(length === undefined || Number(length) === got.body.byteLength, `content-length ${length} vs ${got.body.byteLength} bytes`);
    assert.deepEqual(JSON.parse(got.body.toString("utf8")), body);
    assert.equal(stub.requests.at(-1)!.headers["accept-encoding"], "gzip");
  });

  it("a gzip SSE reply reaches the client decoded", async () => {
    const text = loadFixture("ts_basic_response");
    stub.enqueue({ kind: "sse", chunks: [text], gzip: true });
    const got = await rawRequest(tap.url + "/v1/messages");
    assert.equal(got.headers["content-encoding"], undefined);
    assert.equal(got.body.toString("utf8"), text);
  });

  it("a 204 arrives as a 204 with no body", async () => {
    stub.enqueue({ kind: "raw", status: 204, body: "", headers: { "request-id": "req_204" } });
    const got = await through(tap, "/v1/files/f1", { method: "DELETE" });
    assert.equal(got.status, 204);
    assert.equal(got.body.byteLength, 0);
    assert.equal(got.headers.get("request-id"), "req_204");
    assert.equal(stub.requests.at(-1)!.method, "DELETE");
  });

  it("a HEAD request is forwarded as HEAD and answered without a body, keeping content-length", async () => {
    stub.enqueue({ kind: "raw", status: 200, body: "", headers: { "content-type": "application/json", "x-head": "yes", "content-length": "1234" } });
    const got = await through(tap, "/v1/models?x=1", { method: "HEAD" });
    assert.equal(got.status, 200);
    assert.equal(got.body.byteLength, 0);
    assert.equal(got.headers.get("x-head"), "yes");
    assert.equal(got.headers.get("content-length"), "1234");
    const rec = stub.requests.at(-1)!;
    assert.equal(rec.method, "HEAD");
    assert.equal(rec.url, "/v1/models?x=1");
  });

  for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
    it(`${method} keeps its method, path and query`, async () => {
      const path = `/v1/some/where%20else/${method.toLowerCase()}?a=1&b=2&a=3&q=%2F%3F&empty=`;
      const body = method === "GET" || method === "DELETE" || method === "OPTIONS" ? undefined : `{"method":"${method}"}`;
      stub.enqueue({ kind: "raw", status: 200, body: `ok ${method}`, headers: { "content-type": "text/plain" } });
      const got = await through(tap, path, { method, body, headers: body ? { "content-type": "application/json" } : {} });
      assert.equal(Buffer.from(got.body).toString(), `ok ${method}`);
      const rec = stub.requests.at(-1)!;
      assert.equal(rec.method, method);
      assert.equal(rec.url, path);
      assert.equal(Buffer.from(rec.body).toString(), body ?? "");
    });
  }

  it("a non-streaming Messages answer (mirrored, sent in several chunks) arrives byte-identical", async () => {
    const answer = JSON.stringify(messageJson("msg_ns", "m", [{ type: "text", text: "non-streamed ✓" }], "end_turn"));
    const bytes = utf8(answer);
    const chunks = [bytes.subarray(0, 20), bytes.subarray(20, 61), bytes.subarray(61)];
    for (const [label, reply] of [["one chunk", [bytes]], ["three chunks", chunks]] as const) {
      stub.enqueue({ kind: "sse", chunks: [...reply], delayMs: [0, 5, 5], headers: { "content-type": "application/json" } });
      const request = JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: `non-streaming ${label}` }] });
      const res = await fetch(tap.url + "/v1/messages", {
        ...post(request, { "x-claude-code-session-id": "non-streaming" }),
        signal: AbortSignal.timeout(5000),
      });
      assert.equal(res.status, 200);
      assert.ok(same(new Uint8Array(await res.arrayBuffer()), bytes), label);
    }
  });

  it("a client that sends no accept-encoding gets identity bytes; the upstream is only offered codings the tap decodes", async () => {
    stub.enqueue({ kind: "json", status: 200, body: { ok: "plain" }, gzip: true });
    const got = await rawRequest(tap.url + "/v1/models", {});
    assert.equal(got.headers["content-encoding"], undefined);
    assert.deepEqual(JSON.parse(got.body.toString("utf8")), { ok: "plain" });
    const offered = (stub.requests.at(-1)!.headers["accept-encoding"] ?? "").split(",").map((c) => c.split(";")[0].trim()).filter(Boolean);
    for (const coding of offered) assert.ok(["gzip", "br", "identity"].includes(coding), `offered ${coding}`);
  });

  it("an encoding the tap cannot decode passes through encoded, with its header", async () => {
    const bytes = new Uint8Array([0x01, 0x02, 0xfe, 0xff, 0x00, 0x7f]);
    stub.enqueue({ kind: "raw", status: 200, body: bytes, headers: { "content-type": "application/octet-stream", "content-encoding": "x-custom" } });
    const got = await rawRequest(tap.url + "/v1/blob", {});
    assert.equal(got.headers["content-encoding"], "x-custom");
    assert.ok(same(got.body, bytes));
  });

  it("a redirect is passed to the client, not followed", async () => {
    const before = stub.requests.length;
    stub.enqueue({ kind: "raw", status: 307, body: "moved", headers: { location: "http://127.0.0.2:1/elsewhere", "content-type": "text/plain" } });
    const res = await fetch(tap.url + "/v1/moved?a=1", { redirect: "manual" });
    assert.equal(res.status, 307);
    assert.equal(res.headers.get("location"), "http://127.0.0.2:1/elsewhere");
    assert.equal(await res.text(), "moved");
    assert.equal(stub.requests.length, before + 1);
  });

  it("an upstream with a base path gets that path in front of every request", async () => {
    await using based = await startTestTap(`${stub.url}/gateway/anthropic/`);
    stub.enqueue({ kind: "raw", status: 200, body: "based" });
    const got = await through(based, "/v1/messages?beta=true", post("{}"));
    assert.equal(Buffer.from(got.body).toString(), "based");
    assert.equal(stub.requests.at(-1)!.url, "/gateway/anthropic/v1/messages?beta=true");
  });
});
