import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, readTree, type TestTap, withTap } from "../support/tap.ts";
import { Conversation, textsOf } from "../support/client.ts";

/** Records of one type. */
const ofType = (records: Record<string, unknown>[], type: string) => records.filter((r) => r.type === type);

/** Asserts the records form one linear parentUuid chain in file order. */
function assertLinear(records: Record<string, unknown>[]): void {
  assert.equal(records[0].parentUuid, null);
  for (let i = 1; i < records.length; i++) assert.equal(records[i].parentUuid, records[i - 1].uuid, `record ${i} links to ${i - 1}`);
  assert.equal(new Set(records.map((r) => r.uuid)).size, records.length, "uuids unique");
}

describe("session mirror: a conversation through the tap", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  withTap((started) => ({ stub, tap } = started));

  it("3 turns → exactly 3 user and 3 assistant records, one linear chain", async () => {
    const c = new Conversation(tap, "three-turns");
    const requestIds: (string | null)[] = [];
    for (const text of ["one", "two", "three"]) {
      const turn = await c.say(text);
      assert.equal(turn.status, 200);
      requestIds.push(turn.headers.get("request-id"));
    }
    const files = [...readTree(tap.root).entries()].filter(([path]) => path.startsWith("three-turns/"));
    assert.equal(files.length, 1, "one file directly in the session directory");
    const records = files[0][1];
    assert.equal(ofType(records, "user").length, 3);
    assert.equal(ofType(records, "assistant").length, 3);
    assert.deepEqual(ofType(records, "user").map((r) => textsOf(r)[0]), ["one", "two", "three"]);
    assertLinear(records);
    const assistant = ofType(records, "assistant")[0];
    assert.deepEqual(ofType(records, "assistant").map((r) => r.requestId), requestIds);
    assert.match(String(requestIds[0]), /^req_stub_\d+$/);
    assert.equal(assistant.sessionId, "three-turns");
    assert.equal(assistant.source, "sessiontap");
    // No claude-cli user agent names a client version, so the tap writes its own; no request named a cwd.
    assert.equal(assistant.version, JSON.parse(readFileSync("package.json", "utf8")).version);
    assert.equal("cwd" in assistant, false, "an unknown cwd is left out, never null");
  });

  it("200 turns → exactly 200 + 200 records, and the file grows linearly", { timeout: 120_000 }, async () => {
    const c = new Conversation(tap, "two-hundred");
    const growth: number[] = [];
    let size = 0;
    for (let turn = 1; turn <= 200; turn++) {
      assert.equal((await c.say(`turn ${turn} ${"x".repeat(50)}`)).status, 200);
      const files = [...readTree(tap.root).keys()].filter((k) => k.startsWith("two-hundred/"));
      const now = files.reduce((sum, f) => sum + statSync(`${tap.root}/${f}`).size, 0);
      growth.push(now - size);
      size = now;
    }
    const records = allRecords(`${tap.root}/two-hundred`);
    assert.equal(ofType(records, "user").length, 200);
    assert.equal(ofType(records, "assistant").length, 200);
    assertLinear(records);
    // Quadratic growth would make turn 200 add ~100× what turn 2 added; linear adds about the same.
    assert.ok(growth[199] < growth[1] * 1.5, `turn 200 added ${growth[199]} B, turn 2 added ${growth[1]} B`);
  });

  it('the literal "yes" at turns 2 and 9 → two records', async () => {
    const c = new Conversation(tap, "yes-twice");
    for (let turn = 1; turn <= 10; turn++) await c.say(turn === 2 || turn === 9 ? "yes" : `turn ${turn}`);
    const users = ofType(allRecords(`${tap.root}/yes-twice`), "user");
    assert.equal(users.length, 10);
    assert.equal(users.filter((r) => textsOf(r)[0] === "yes").length, 2);
  });

  it("several tool results in one user message are each mirrored once", async () => {
    const c = new Conversation(tap, "tools");
    await c.say("RUNTOOL please");
    const toolUse = c.messages[1].content as { type: string; id: string }[];
    const id = toolUse.find((b) => b.type === "tool_use")!.id;
    await c.say([
      { type: "tool_result", tool_use_id: id, content: "first" },
      { type: "tool_result", tool_use_id: `${id}-b`, content: [{ type: "text", text: "second" }], is_error: true },
    ]);
    await c.say("thanks");
    const records = allRecords(`${tap.root}/tools`);
    const results = ofType(records, "user").flatMap((r) => {
      const content = (r.message as { content: unknown }).content;
      return Array.isArray(content) ? content.filter((b) => b.type === "tool_result") : [];
    });
    assert.deepEqual(results.map((b) => b.tool_use_id), [id, `${id}-b`]);
    assert.equal(ofType(records, "assistant").length, 3);
  });

  it("base64 image bytes never reach the disk: a sha256 reference does", async () => {
    const bytes = new Uint8Array(3000).map((_, i) => (i * 7919) % 251);
    const data = Buffer.from(bytes).toString("base64");
    const c = new Conversation(tap, "image");
    await c.say([{ type: "image", source: { type: "base64", media_type: "image/png", data } }, { type: "text", text: "what is this?" }]);
    const image = (ofType(allRecords(`${tap.root}/image`), "user")[0].message as { content: { source?: unknown }[] }).content[0].source;
    const { createHash } = await import("node:crypto");
    assert.deepEqual(image, { type: "reference", sha256: createHash("sha256").update(bytes).digest("hex"), media_type: "image/png" });
    for (const file of readTree(tap.root).keys()) {
      assert.ok(!readFileSync(`${tap.root}/${file}`, "utf8").includes(data.slice(100, 160)), `${file} holds no base64 fragment`);
    }
  });

  it("a path-traversal session id lands in its inv- directory inside the root", async () => {
    for (const hostile of ["../../etc/passwd", "a/b", "x".repeat(300), "nul\u0000byte"]) {
      const c = new Conversation(tap, null, { body: { metadata: { user_id: JSON.stringify({ session_id: hostile }) } } });
      assert.equal((await c.say("hi")).status, 200);
      const found = [...readTree(tap.root).entries()].filter(([, records]) => records.some((r) => r.sessionId === hostile));
      assert.equal(found.length, 1, JSON.stringify(hostile.slice(0, 20)));
      assert.match(found[0][0], /^inv-[0-9a-f]{16}\/[^/]+\.jsonl$/);
    }
  });

  it("sessionless traffic goes to unknown/", async () => {
    await new Conversation(tap, null).say("who am I");
    assert.ok([...readTree(tap.root).keys()].some((k) => k.startsWith("unknown/")));
  });

  it("reads cwd and gitBranch from Claude Code's environment block, and keeps role:system messages as system records", async () => {
    const env = "# Environment\n - Primary working directory: /home/me/proj\n - Is a git repository: true\n\ngitStatus: x\nCurrent branch: feature/x\n";
    const c = new Conversation(tap, "cwd", { system: [{ type: "text", text: "x-anthropic-billing-header: cc_version=2.1.328; cc_entrypoint=cli;" }] });
    c.messages.push({ role: "user", content: "hi" }, { role: "system", content: [{ type: "text", text: env }] });
    const r = await c.send();
    assert.equal(r.status, 200);
    const records = allRecords(`${tap.root}/cwd`);
    assert.deepEqual(records.map((x) => x.type), ["user", "system", "assistant"]);
    for (const record of records) {
      assert.equal(record.cwd, "/home/me/proj");
      assert.equal(record.gitBranch, "feature/x");
      assert.equal(record.entrypoint, "cli");
    }
    assert.equal(records[1].subtype, "api_message");
  });

  it("mirrors a non-streaming response; count_tokens and errors are forwarded, not mirrored", async () => {
    const sent = await fetch(`${tap.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-claude-code-session-id": "json" },
      body: JSON.stringify({ model: "m", stream: false, messages: [{ role: "user", content: "plain json" }] }),
    });
    assert.equal(sent.status, 200);
    assert.equal((await sent.json()).type, "message");
    await tap.settled();
    const records = allRecords(`${tap.root}/json`);
    assert.deepEqual(records.map((r) => r.type), ["user", "assistant"]);
    assert.equal(typeof (records[1].message as { id: unknown }).id, "string");
    const counted = await fetch(`${tap.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "x-claude-code-session-id": "counted" },
      body: JSON.stringify({ messages: [{ role: "user", content: "n" }] }),
    });
    assert.equal(counted.status, 200);
    await counted.arrayBuffer();
    stub.enqueue({ kind: "json", status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "no" } } });
    const failed = await new Conversation(tap, "errored").say("bad");
    assert.equal(failed.status, 400);
    assert.deepEqual([...readTree(tap.root).keys()].filter((k) => k.startsWith("counted/") || k.startsWith("errored/")), []);
  });
});
