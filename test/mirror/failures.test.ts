import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { loadFixture, startStub, type StubUpstream, textReply } from "../support/stub-upstream.ts";
import { allRecords, readEvents, startTestTap, type TestTap, withTap } from "../support/tap.ts";
import { BASH_TOOL, Conversation, textsOf } from "../support/client.ts";
import { faultyEngineFs } from "../support/faulty-fs.ts";
import { pollAsync, within } from "../support/poll.ts";

const ofType = (records: Record<string, unknown>[], type: string) => records.filter((r) => r.type === type);

describe("session mirror: failures and retries", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  withTap((started) => ({ stub, tap } = started));

  it("529 with retry-after, then the retry → the turn appears exactly once", async () => {
    const c = new Conversation(tap, "s529");
    await c.say("one");
    stub.enqueue({
      kind: "json",
      status: 529,
      headers: { "retry-after": "3" },
      body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
    });
    const failed = await c.say("two", { keepOnFailure: true });
    assert.equal(failed.status, 529);
    assert.equal(failed.headers.get("retry-after"), "3");
    const retry = await c.send();
    assert.equal(retry.status, 200);
    const records = allRecords(`${tap.root}/s529`);
    assert.deepEqual(ofType(records, "user").map((r) => textsOf(r)[0]), ["one", "two"]);
    assert.equal(ofType(records, "assistant").length, 2);
  });

  it("a non-streaming answer whose JSON is broken is skipped (counted, logged), not an internal error: health stays ok", async () => {
    const broken = '{"type":"message","id":"msg_broken","content":[{"type":"text","text":"cut';
    stub.enqueue({ kind: "raw", status: 200, body: broken, headers: { "content-type": "application/json" } });
    const res = await fetch(`${tap.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "sk-test", "x-claude-code-session-id": "sbroken" },
      body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "answer me in broken JSON" }] }),
    });
    assert.equal(await res.text(), broken, "the client gets the bytes as they came");
    await tap.settled();
    const health = await (await fetch(`${tap.url}/_tap/health`)).json() as { status: string; problems: string[]; mirror: { skipped: number; errors: number } };
    assert.equal(health.status, "ok", JSON.stringify(health.problems));
    assert.equal(health.mirror.errors, 0);
    assert.ok(health.mirror.skipped >= 1);
    const events = readEvents(tap.root);
    assert.ok(events.some((e) => e.action === "skip" && /not JSON/.test(String(e.reason))), "the events log says why");
    assert.deepEqual(events.filter((e) => e.action === "error"), []);
  });

  it("an error event mid-stream, then the retry → the user message once, what arrived kept as interrupted, the retry's answer once", async () => {
    const c = new Conversation(tap, "serr");
    await c.say("one");
    stub.enqueue({ kind: "sse", chunks: [loadFixture("error_midstream")] });
    const failed = await c.say("two", { keepOnFailure: true });
    assert.equal(failed.status, 200);
    assert.equal(failed.content.length, 0, "the client saw no complete message");
    await c.send();
    const records = allRecords(`${tap.root}/serr`);
    assert.deepEqual(ofType(records, "user").map((r) => textsOf(r)[0]), ["one", "two"]);
    const answers = ofType(records, "assistant");
    assert.deepEqual(answers.map((r) => (r.message as { stop_reason: string }).stop_reason), ["end_turn", "interrupted", "end_turn"]);
    assert.equal(textsOf(answers[1]).join(""), "Let me start by looking at the failing test", "what arrived before the error event");
    const two = ofType(records, "user")[1].uuid;
    assert.deepEqual([answers[1].parentUuid, answers[2].parentUuid], [two, two], 'the partial and the retry both answer "two"');
  });

  it("a connection reset mid-block, then the retry → the prompt once, the partial marked interrupted, the retry's answer once", async () => {
    const c = new Conversation(tap, "sreset");
    await c.say("one");
    const events = textReply("partial answer that never ends", { deltas: 4 });
    stub.enqueue({ kind: "reset-after", chunks: events.slice(0, 4) });
    const failed = await c.say("two", { keepOnFailure: true });
    assert.ok(failed.status === -1 || failed.content.length === 0, "the client saw the cut");
    await c.send();
    const records = allRecords(`${tap.root}/sreset`);
    assert.deepEqual(ofType(records, "user").map((r) => textsOf(r)[0]), ["one", "two"]);
    const answers = ofType(records, "assistant");
    assert.deepEqual(answers.map((r) => (r.message as { stop_reason: string }).stop_reason), ["end_turn", "interrupted", "end_turn"]);
    assert.ok(
      "partial answer that never ends".startsWith(textsOf(answers[1]).join("")) && textsOf(answers[1]).join("") !== "",
      "the partial holds what arrived",
    );
  });

  // A whole answer whose stream did not end cleanly: the client's SDK has the message (message_delta carried
  // its stop_reason), so it is mirrored like any complete answer, never marked interrupted.
  const untidyEnds: [string, (events: string[]) => string[]][] = [
    ["without message_stop", (events) => events.slice(0, -1)],
    ["without the blank line after message_stop", (events) => [...events.slice(0, -1), events.at(-1)!.replace(/\n\n$/, "\n")]],
    ["with message_stop's data line cut before its newline", (events) => [...events.slice(0, -1), events.at(-1)!.replace(/\n\n$/, "")]],
    ["after message_delta, then a connection reset", (events) => events.slice(0, -1)],
  ];
  for (const [label, cut] of untidyEnds) {
    it(`a whole answer ${label} → mirrored as complete, once`, async () => {
      const session = `suntidy-${label.replace(/[^a-z]+/g, "-")}`;
      const c = new Conversation(tap, session);
      await c.say("one");
      const events = textReply("the whole answer", { deltas: 3 });
      const chunks = cut(events);
      stub.enqueue(label.includes("reset") ? { kind: "reset-after", chunks } : { kind: "sse", chunks });
      await c.say("two", { keepOnFailure: true });
      await tap.engine!.query("mirror.flush", 5000); // a cut stream's commit is not awaited by the client's read
      const records = allRecords(`${tap.root}/${session}`);
      assert.deepEqual(ofType(records, "user").map((r) => textsOf(r)[0]), ["one", "two"]);
      const answers = ofType(records, "assistant");
      assert.equal(answers.length, 2, JSON.stringify(answers.map((r) => r.message)));
      assert.equal((answers[1].message as { stop_reason: string }).stop_reason, "end_turn");
      assert.equal(textsOf(answers[1]).join(""), "the whole answer");
      assert.equal(answers[1].parentUuid, ofType(records, "user")[1].uuid);
    });
  }

  it("a client that leaves after content arrived → its prompt and a partial answer marked interrupted; then once", async () => {
    const c = new Conversation(tap, "sleave");
    await c.say("one");
    const events = textReply("a long answer", { deltas: 4 });
    stub.enqueue({ kind: "stall-after", chunks: events.slice(0, 5) });
    const controller = new AbortController();
    const response = await fetch(`${tap.url}/v1/messages`, {
      method: "POST",
      signal: controller.signal,
      headers: { "content-type": "application/json", "x-api-key": "sk-ant-test-SECRET", "x-claude-code-session-id": "sleave" },
      body: JSON.stringify({ model: "m", stream: true, tools: [BASH_TOOL], messages: [...c.messages, { role: "user", content: "two" }] }),
    });
    const reader = response.body!.getReader();
    let seen = "";
    while (!seen.includes("text_delta")) seen += new TextDecoder().decode((await reader.read()).value);
    const upstreamRequest = stub.requests.at(-1)!;
    controller.abort();
    await upstreamRequest.closed;
    assert.equal(upstreamRequest.aborted, true, "the upstream request was aborted");
    await tap.engine!.query("mirror.flush", 2000);
    const records = allRecords(`${tap.root}/sleave`);
    const partial = ofType(records, "assistant").at(-1)!;
    assert.equal((partial.message as { stop_reason: string }).stop_reason, "interrupted");
    assert.ok(textsOf(partial)[0].length > 0);
    c.messages.push({ role: "user", content: "two" });
    await c.send();
    const after = allRecords(`${tap.root}/sleave`);
    assert.deepEqual(ofType(after, "user").map((r) => textsOf(r)[0]), ["one", "two"]);
    assert.equal(ofType(after, "assistant").length, 3, "answer 1, the interrupted one, the retry's");
  });
});

describe("session mirror: a writer that fails never touches the client", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  const faults = faultyEngineFs();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  withTap((started) => ({ stub, tap } = started), { deps: { engineSeams: faults.seams } });
  before(async () => {
    process.on("unhandledRejection", onUnhandled);
  });
  afterEach(async () => {
    await faults.heal();
  });
  after(async () => {
    process.off("unhandledRejection", onUnhandled);
  });

  for (const fault of ["throw", "reject", "hang"] as const) {
    it(`a writer that ${fault}s: the client gets identical bytes without waiting for it; no unhandled rejection`, async () => {
      const events = textReply(`answer for ${fault}`, { deltas: 5 });
      stub.enqueue({ kind: "sse", chunks: events });
      await faults.set(fault);
      const before = readEvents(tap.root).filter((e) => e.action === "error").length;
      const result = await new Conversation(tap.url, `w-${fault}`).say("hello");
      assert.equal(result.status, 200);
      assert.equal(new TextDecoder().decode(result.raw), events.join(""));
      if (fault === "hang") {
        await pollAsync(() => faults.hung(), (n) => n === 1, 5000, "the write to hang");
        assert.equal(allRecords(`${tap.root}/w-${fault}`).length, 0, "the client had every byte while the write still hung");
        await faults.heal();
      } else {
        await tap.engine!.query("mirror.flush", 500);
        const errors = readEvents(tap.root).filter((e) => e.action === "error");
        assert.ok(errors.length > before, "the failure is in the events log");
        assert.match(String(errors.at(-1)!.error), fault === "throw" ? /EIO/ : /ENOSPC/);
        assert.equal(allRecords(`${tap.root}/w-${fault}`).length, 0, "nothing reached the disk");
        assert.ok((await tap.engine!.query("stats")).queued >= 1, "the commit waits in memory");
        await faults.set(null);
      }
      // Once the filesystem recovers, the waiting commit is written as it was, answer metadata included.
      await tap.engine!.query("mirror.flush", 2000);
      const records = allRecords(`${tap.root}/w-${fault}`);
      assert.deepEqual(records.map((r) => r.type), ["user", "assistant"]);
      assert.equal(records[1].requestId, result.headers.get("request-id"));
      assert.equal((await tap.engine!.query("stats")).queued, 0);
      assert.deepEqual(unhandled, []);
    });
  }

  it("while the write hangs, the whole answer reaches the client, message_stop included; the record is written once the disk is back", async () => {
    const events = textReply("all in one chunk", { deltas: 3 });
    stub.enqueue({ kind: "sse", chunks: [events.join("")] });
    await faults.set("hang");
    const response = await fetch(`${tap.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-claude-code-session-id": "w-partial" },
      body: JSON.stringify({ model: "m", stream: true, tools: [BASH_TOOL], messages: [{ role: "user", content: "one chunk please" }] }),
    });
    assert.equal(await within(response.text(), 5000, "the answer while the write hangs"), events.join(""));
    await pollAsync(() => faults.hung(), (n) => n === 1, 5000, "the write to hang");
    assert.equal(allRecords(`${tap.root}/w-partial`).length, 0);
    await faults.heal();
    await tap.engine!.query("mirror.flush", 2000);
    assert.deepEqual(allRecords(`${tap.root}/w-partial`).map((r) => r.type), ["user", "assistant"]);
  });

  it("after a failed write the next turn writes the waiting commit first, then its own, each once", async () => {
    const c = new Conversation(tap, "w-recover");
    await faults.set("reject");
    assert.equal((await c.say("failed turn")).status, 200);
    await faults.set(null);
    await c.say("next turn");
    const records = allRecords(`${tap.root}/w-recover`);
    assert.deepEqual(ofType(records, "user").map((r) => textsOf(r)[0]), ["failed turn", "next turn"]);
    assert.deepEqual(records.map((r) => Boolean(r.reconstructed)), [false, false, false, false], "written as it happened, not rebuilt");
    assert.ok(ofType(records, "assistant").every((r) => typeof r.requestId === "string"));
  });

  it("a full queue drops the oldest commit and counts it", async () => {
    const smallFaults = faultyEngineFs();
    await using small = await startTestTap(stub.url, { SESSIONTAP_MAX_QUEUED: "2" }, { engineSeams: smallFaults.seams });
    await smallFaults.set("reject");
    const c = new Conversation(small.url, "w-full");
    for (let i = 0; i < 4; i++) assert.equal((await c.say(`turn ${i}`)).status, 200);
    // The client has each answer before its commit reaches the tree (its session's owner is judged first).
    const stats = await pollAsync(() => small.engine!.query("stats"), (s) => s.queued + s.dropped === 4, 5_000, "every commit handed to the tree");
    assert.equal(stats.queued, 2);
    assert.equal(stats.dropped, 2);
    await small.engine!.query("mirror.flush", 500); // the events log is flushed with the writes (the tree's still fail)
    assert.ok(readEvents(small.root).some((e) => e.action === "drop"));
    await smallFaults.set(null);
    await small.engine!.query("mirror.flush", 2000);
    // The two newest commits carry the whole history: nothing the client sent is missing on disk.
    assert.deepEqual(ofType(allRecords(`${small.root}/w-full`), "user").map((r) => textsOf(r)[0]), ["turn 0", "turn 1", "turn 2", "turn 3"]);
  });
});

describe("session mirror: restart", () => {
  let stub: StubUpstream;
  let dir: string;
  beforeEach(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-restart-`);
  });
  afterEach(async () => {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a tap restarted between turns 2 and 3 rebuilds its state from the files: no duplicates", async () => {
    let tap = await startTestTap(stub.url, {}, {}, dir);
    const c = new Conversation(tap, "restart");
    await c.say("one");
    await c.say("two");
    await tap.stop();
    tap = await startTestTap(stub.url, {}, {}, dir);
    const again = new Conversation(tap, "restart");
    again.messages.push(...c.messages);
    await again.say("three");
    await tap.stop();
    const records = allRecords(`${dir}/mirror/restart`);
    assert.deepEqual(ofType(records, "user").map((r) => textsOf(r)[0]), ["one", "two", "three"]);
    assert.equal(ofType(records, "assistant").length, 3);
    assert.equal(records.filter((r) => r.reconstructed).length, 0);
  });

  it("with SESSIONTAP_MAX_SESSIONS=1, sessions evicted from memory are rebuilt, not re-mirrored", async () => {
    await using tap = await startTestTap(stub.url, { SESSIONTAP_MAX_SESSIONS: "1" }, {}, dir);
    const a = new Conversation(tap, "lru-a");
    const b = new Conversation(tap, "lru-b");
    for (let i = 0; i < 3; i++) {
      await a.say(`a${i}`);
      await b.say(`b${i}`);
    }
    await tap.stop();
    for (const id of ["lru-a", "lru-b"]) {
      const records = allRecords(`${dir}/mirror/${id}`);
      assert.equal(records.length, 6, id);
    }
  });
});
