// Issue 2, "Real client": the real Claude Code CLI (`claude -p`) through a real tap against the stub
// upstream prints the stub's answer and exits 0; what reached the stub is what the CLI sent (session id
// header, API key, a JSON body); the tap stays healthy. Runs unchanged under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";
import { type ClaudeRun, describeRun, findTranscripts, makeScratch, runClaude, type Scratch, TEST_API_KEY } from "../support/claude.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

describe("claude -p through the tap (issue 2, real client)", { timeout: 120_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  let run: ClaudeRun;

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    scratch = makeScratch();
    run = await runClaude(["-p", "say hello"], { baseUrl: tap.url, scratch, timeoutMs: 60_000 });
  });

  after(async () => {
    scratch?.cleanup();
  });

  it("exits 0 within the time bound", () => {
    assert.equal(run.timedOut, false, `claude was killed after its time bound: ${describeRun(run)}`);
    assert.equal(run.code, 0, describeRun(run));
  });

  it("sent its request through the tap to the stub", () => {
    const messages = stub.requests.filter((r) => r.method === "POST" && r.url.split("?")[0] === "/v1/messages");
    assert.ok(messages.length >= 1, `the stub saw no POST /v1/messages: ${JSON.stringify(stub.requests.map((r) => r.url))}`);
    // The tap rewrites `host` for the upstream: the request arrived addressed to the stub, not the tap.
    assert.equal(messages[0].headers.host, `127.0.0.1:${stub.port}`);
  });

  it("prints the stub's answer, numbered as the stub numbered it", () => {
    const i = stub.requests.findLastIndex((r) => r.method === "POST" && r.url.split("?")[0] === "/v1/messages");
    assert.ok(i >= 0);
    assert.equal(run.stdout.trim(), `Done (reply ${i + 1}).`, describeRun(run));
  });

  it("the stub received the session id and the API key headers intact", () => {
    const sessions = new Set<string>();
    for (const r of stub.requests) {
      assert.equal(r.headers["x-api-key"], TEST_API_KEY, `x-api-key altered on ${r.method} ${r.url}`);
      const sid = r.headers["x-claude-code-session-id"];
      assert.match(sid ?? "", UUID, `x-claude-code-session-id missing or malformed on ${r.method} ${r.url}`);
      sessions.add(sid);
    }
    assert.equal(sessions.size, 1, `one session, got ${[...sessions].join(", ")}`);
    // The header names the session whose transcript Claude Code wrote.
    const transcripts = findTranscripts(scratch.home).map((p) => p.split("/").at(-1));
    assert.ok(transcripts.includes(`${[...sessions][0]}.jsonl`), `transcripts ${JSON.stringify(transcripts)}`);
  });

  it("the request bodies reached the stub unaltered: complete JSON carrying the prompt", () => {
    for (const r of stub.requests.filter((q) => q.method === "POST")) {
      const declared = r.headers["content-length"];
      if (declared !== undefined) assert.equal(r.body.byteLength, Number(declared), "body length differs from content-length");
      const body = JSON.parse(Buffer.from(r.body).toString("utf8"));
      assert.equal(typeof body.model, "string");
      assert.ok(Array.isArray(body.messages));
    }
    const last = JSON.parse(Buffer.from(stub.requests.at(-1)!.body).toString("utf8"));
    const users = last.messages.filter((m: { role: string }) => m.role === "user");
    assert.ok(JSON.stringify(users.at(-1)).includes("say hello"), "the prompt is in the last user message");
  });

  it("the tap's /_tap/health is still ok and was not forwarded", async () => {
    const before = stub.requests.length;
    const res = await fetch(`${tap.url}/_tap/health`);
    assert.equal(res.status, 200);
    const health = await res.json();
    assert.equal(health.status, "ok");
    assert.ok(health.runtime === "bun" || health.runtime === "deno", `runtime ${health.runtime}`);
    assert.equal(stub.requests.length, before, "the health check reached the upstream");
  });
});
