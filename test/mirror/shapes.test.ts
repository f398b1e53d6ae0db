import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { readEvents, readTree, startTestTap, type TestTap } from "../support/tap.ts";
import { Conversation, textsOf } from "../support/client.ts";

type Rec = Record<string, unknown>;
const ofType = (records: Rec[], type: string) => records.filter((r) => r.type === type);
const text = (r: Rec) => textsOf(r).join("|");

/** The records of one directory of a session (main: ""; "side"; "subagents/agent-x"), in file order. */
function records(root: string, session: string, sub = ""): Rec[] {
  const prefix = sub === "" ? `${session}/` : `${session}/${sub}/`;
  return [...readTree(root).entries()]
    .filter(([path]) => path.startsWith(prefix) && !path.slice(prefix.length).includes("/"))
    .flatMap(([, recs]) => recs);
}

/** Asserts no message content appears twice in a set of records. */
function assertNoDuplicates(recs: Rec[]): void {
  const seen = new Set<string>();
  for (const r of recs) {
    if (r.message === undefined) continue;
    const key = JSON.stringify([r.type, (r.message as { content: unknown }).content, r.parentUuid]);
    assert.ok(!seen.has(key), `duplicate record: ${key.slice(0, 120)}`);
    seen.add(key);
  }
  assert.equal(new Set(recs.map((r) => r.uuid)).size, recs.length, "uuids unique");
}

/** The path of records from `leaf` back to its root. */
function pathTo(recs: Rec[], leaf: Rec): Rec[] {
  const byUuid = new Map(recs.map((r) => [r.uuid, r]));
  const path: Rec[] = [];
  for (let r: Rec | undefined = leaf; r !== undefined && path.length <= recs.length; r = byUuid.get(r.parentUuid as string)) path.unshift(r);
  return path;
}

describe("mirror shapes: rewind, compaction, side requests, subagents", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let dir: string;
  before(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-shapes-`);
    tap = await startTestTap(stub.url, {}, {}, dir);
  });
  after(async () => {
    await tap.close();
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("rewind at turn 5 of 8, then 3 new turns: the branch hangs from turn 4's answer; nothing is rewritten", async () => {
    const c = new Conversation(tap, "rewind");
    for (let t = 1; t <= 8; t++) await c.say(`turn ${t}`);
    const before = records(tap.root, "rewind");
    assert.equal(before.length, 16);
    c.messages.splice(8); // keep turns 1–4 (8 messages): the user edits turn 5
    for (let t = 5; t <= 7; t++) await c.say(`edited turn ${t}`);
    const after = records(tap.root, "rewind");
    assert.deepEqual(after.slice(0, 16), before, "what was written stays as it was");
    assert.equal(after.length, 22);
    const fork = after[16];
    assert.equal(text(fork), "edited turn 5");
    assert.equal(fork.parentUuid, before[7].uuid, "the branch hangs from turn 4's answer");
    assert.equal(ofType(after, "user").filter((r) => r.parentUuid === before[7].uuid).length, 2, "turn 5 and its edit are siblings");
    assertNoDuplicates(after);
    // The current branch reads as the user now sees the conversation.
    assert.deepEqual(pathTo(after, after.at(-1)!).filter((r) => r.type === "user").map(text), [
      "turn 1",
      "turn 2",
      "turn 3",
      "turn 4",
      "edited turn 5",
      "edited turn 6",
      "edited turn 7",
    ]);
  });

  it("a restart after a rewind rebuilds the tree: the next turn continues the branch, nothing doubles", async () => {
    const c = new Conversation(tap, "rewind-restart");
    for (let t = 1; t <= 4; t++) await c.say(`turn ${t}`);
    c.messages.splice(4);
    await c.say("edited turn 3");
    await tap.stop();
    tap = await startTestTap(stub.url, {}, {}, dir);
    const again = new Conversation(tap, "rewind-restart");
    again.messages.push(...c.messages);
    await again.say("turn 4 after restart");
    const recs = records(tap.root, "rewind-restart");
    assert.equal(recs.length, 8 + 2 + 2);
    assert.equal(recs.at(-2)!.parentUuid, recs.at(-3)!.uuid, "continues the rewound branch");
    assert.equal(recs.filter((r) => r.reconstructed).length, 0);
    assertNoDuplicates(recs);
  });

  it("compaction after turn 10 keeping the last 2 messages: boundary, summary, new segment; nothing mirrored twice", async () => {
    const c = new Conversation(tap, "compact");
    for (let t = 1; t <= 10; t++) await c.say(`turn ${t}`);
    const main = records(tap.root, "compact");
    // The summarising request: the history, with the instruction appended to the last user message.
    const summarise = new Conversation(tap, "compact");
    summarise.messages.push(...c.messages.slice(0, 18), {
      role: "user",
      content: [{ type: "text", text: "turn 10" }, { type: "text", text: "CRITICAL: Respond with TEXT ONLY. Summarise with <analysis> and <summary>." }],
    });
    const summary = await summarise.send();
    assert.equal(summary.status, 200);
    await summarise.send(); // Claude Code may send it twice
    assert.deepEqual(records(tap.root, "compact"), main, "the main chain gains no branch");
    const side = records(tap.root, "compact", "side");
    assert.deepEqual(side.map((r) => r.type), ["user", "assistant", "assistant"], "the exchange once, each answer once");
    assert.ok(side.every((r) => r.isSidechain === true));
    assert.equal(side[0].parentUuid, main[17].uuid, "it hangs from the main record before it");

    const kept = c.messages.slice(-2);
    const next = new Conversation(tap, "compact");
    next.messages.push(
      { role: "user", content: "This session is being continued from a previous conversation that ran out of context. Summary: ten turns." },
      ...kept,
    );
    await next.say("turn 11");
    await next.say("turn 12");
    const all = records(tap.root, "compact");
    const segment = all.slice(main.length);
    assert.deepEqual(segment.map((r) => [r.type, r.subtype ?? null]), [
      ["system", "compact_boundary"],
      ["user", null],
      ["user", null],
      ["assistant", null],
      ["user", null],
      ["assistant", null],
    ]);
    const [boundary, summaryRecord, turn11] = segment;
    assert.equal(boundary.parentUuid, null);
    assert.equal(boundary.logicalParentUuid, main.at(-1)!.uuid);
    assert.equal(summaryRecord.isCompactSummary, true);
    assert.equal(summaryRecord.reconstructed, undefined, "the summary is seen first-hand, not rebuilt");
    assert.equal(summaryRecord.parentUuid, boundary.uuid);
    assert.equal(turn11.parentUuid, summaryRecord.uuid);
    assert.equal(text(turn11), "turn 11");
    const segmentMeta = (boundary.compactMetadata as { preservedSegment: Record<string, string> }).preservedSegment;
    assert.deepEqual([segmentMeta.headUuid, segmentMeta.tailUuid, segmentMeta.anchorUuid], [main[18].uuid, main[19].uuid, summaryRecord.uuid]);
    assertNoDuplicates(all);
  });

  it("a restart after a compaction continues the compacted segment without rewriting it", async () => {
    await tap.stop();
    tap = await startTestTap(stub.url, {}, {}, dir);
    const before = records(tap.root, "compact");
    const c = new Conversation(tap, "compact");
    const segment = before.filter((r) => r.message !== undefined).slice(-5);
    c.messages.push(
      { role: "user", content: "This session is being continued from a previous conversation that ran out of context. Summary: ten turns." },
      { role: "user", content: "turn 10" },
      { role: "assistant", content: (before[19].message as { content: unknown }).content },
      ...segment.slice(1).map((r) => ({ role: (r.message as { role: string }).role, content: (r.message as { content: unknown }).content })),
    );
    await c.say("turn 13");
    const after = records(tap.root, "compact");
    assert.equal(after.length, before.length + 2);
    assert.equal(after.at(-2)!.parentUuid, before.at(-1)!.uuid);
  });

  it("a title request between turns goes to side/ and the main chain continues as if it had not happened", async () => {
    const c = new Conversation(tap, "titled");
    await c.say("first");
    const title = await fetch(`${tap.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "sk-ant-test-SECRET", "x-claude-code-session-id": "titled" },
      body: JSON.stringify({
        model: "haiku",
        max_tokens: 50,
        stream: true,
        system: "Generate a short title.",
        messages: [{ role: "user", content: "Write a title for: first" }],
      }),
    });
    assert.equal(title.status, 200);
    await title.arrayBuffer();
    await c.say("second");
    const main = records(tap.root, "titled");
    assert.deepEqual(main.map((r) => [r.type, text(r)]).filter(([t]) => t === "user"), [["user", "first"], ["user", "second"]]);
    for (let i = 1; i < main.length; i++) assert.equal(main[i].parentUuid, main[i - 1].uuid);
    const side = records(tap.root, "titled", "side");
    assert.deepEqual(side.map((r) => r.type), ["user", "assistant"]);
    assert.ok(side.every((r) => r.isSidechain === true));
    assert.equal(side[0].parentUuid, null, "it shares nothing with the conversation");
  });

  it("Claude Code 2.1.328's own title request (its identity line, a JSON title asked for, no tools) goes to side/", async () => {
    const c = new Conversation(tap, "titled-2");
    await c.say("name me");
    // As the real CLI sends it (see test/e2e/claude-guard.test.ts): the identity opens every system prompt.
    const title = await fetch(`${tap.url}/v1/messages`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": "sk-ant-test-SECRET",
        "x-claude-code-session-id": "titled-2",
        "user-agent": "claude-cli/2.1.328 (external, cli)",
      },
      body: JSON.stringify({
        model: "claude-opus-5-5",
        max_tokens: 128000,
        stream: true,
        system: [{ type: "text", text: "You are Claude Code, Anthropic's official CLI for Claude." }, {
          type: "text",
          text: "You are naming a coding session…",
        }],
        messages: [{
          role: "user",
          content: [{ type: "text", text: "<session>\nname me\n</session>\n\nWrite the title in the predominant language of the session." }],
        }],
        output_config: { format: { type: "json_schema", schema: { type: "object", properties: { title: { type: "string" } }, required: ["title"] } } },
      }),
    });
    assert.equal(title.status, 200);
    await title.arrayBuffer();
    await c.say("and on");
    assert.deepEqual(records(tap.root, "titled-2").filter((r) => r.type === "user").map(text), ["name me", "and on"]);
    const side = records(tap.root, "titled-2", "side");
    assert.deepEqual(side.map((r) => r.type), ["user", "assistant"]);
    assert.match(text(side[0]), /^<session>\nname me/);
  });

  it("Claude Code 2.1.328's own title request (its identity line, no tools, a JSON answer asked for) goes to side/ too, before the first turn", async () => {
    // The shape the real CLI sends before the first turn: the agent's identity line opens its system prompt,
    // so only the structured-answer request (no tools) tells it from the conversation.
    const title = await fetch(`${tap.url}/v1/messages?beta=true`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": "sk-ant-test-SECRET",
        "x-claude-code-session-id": "real-title",
        "user-agent": "claude-cli/2.1.328 (external, cli)",
      },
      body: JSON.stringify({
        model: "claude-opus-5-5",
        max_tokens: 128000,
        stream: true,
        tools: [],
        system: [{ type: "text", text: "You are Claude Code, Anthropic's official CLI for Claude." }, {
          type: "text",
          text: "You are naming a coding session so the user can pick it out.",
        }],
        messages: [{ role: "user", content: [{ type: "text", text: "<session>\nfix the login test\n</session>\n\nWrite the title in English." }] }],
        output_config: {
          effort: "medium",
          format: { type: "json_schema", schema: { type: "object", properties: { title: { type: "string" } }, required: ["title"] } },
        },
      }),
    });
    assert.equal(title.status, 200);
    await title.arrayBuffer();
    const c = new Conversation(tap, "real-title");
    await c.say("fix the login test");
    const main = records(tap.root, "real-title");
    assert.deepEqual(main.filter((r) => r.type === "user").map(text), ["fix the login test"], "the title exchange is not a second conversation");
    const side = records(tap.root, "real-title", "side");
    assert.deepEqual(side.map((r) => r.type), ["user", "assistant"]);
    assert.match(text(side[0]), /^<session>/);
  });

  it("Claude Code's model probe on Vertex AI and Bedrock (its identity line, no tools, one token asked for) goes to side/, before the first turn", async () => {
    // As 2.1.328 and 2.1.332 send it, holding real credentials, once per model before the session's first turn
    // (test/e2e/claude-providers.test.ts, proxy mode).
    for (const model of ["claude-sonnet-4-5", "claude-opus-5-5"]) {
      const probe = await fetch(`${tap.url}/v1/messages`, {
        method: "POST",
        // With the credentials of the turns after it, as Claude Code sends it: the session's owner.
        headers: {
          "content-type": "application/json",
          "x-api-key": "sk-ant-test-SECRET",
          "x-claude-code-session-id": "probed",
          "user-agent": "claude-cli/2.1.332 (external, sdk-cli)",
        },
        body: JSON.stringify({
          model,
          max_tokens: 1,
          system: [{ type: "text", text: "x-anthropic-billing-header: cc_version=2.1.332;" }, {
            type: "text",
            text: "You are Claude Code, Anthropic's official CLI for Claude.",
          }],
          messages: [{ role: "user", content: "." }],
        }),
      });
      assert.equal(probe.status, 200);
      await probe.arrayBuffer();
    }
    const c = new Conversation(tap, "probed");
    await c.say("the real first prompt");
    await tap.settled();
    const main = records(tap.root, "probed");
    assert.deepEqual(main.filter((r) => r.type === "user").map(text), ["the real first prompt"], "no probe is the main chain");
    assert.equal(main[0].parentUuid, null);
    const side = records(tap.root, "probed", "side");
    assert.deepEqual(side.map((r) => [r.type, r.isSidechain]), [["user", true], ["assistant", true], ["assistant", true]]);
  });

  it("with SESSIONTAP_SIDE_REQUESTS=off a side request is forwarded and not mirrored at all", async () => {
    await using quiet = await startTestTap(stub.url, { SESSIONTAP_SIDE_REQUESTS: "off" });
    await new Conversation(quiet, "no-side").say("main turn");
    const title = await fetch(`${quiet.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "sk-ant-test-SECRET", "x-claude-code-session-id": "no-side" },
      body: JSON.stringify({
        model: "haiku",
        max_tokens: 50,
        stream: true,
        system: "Generate a short title.",
        messages: [{ role: "user", content: "Write a title" }],
      }),
    });
    assert.equal(title.status, 200);
    await title.arrayBuffer();
    await quiet.engine!.query("mirror.flush", 2000);
    assert.equal(records(quiet.root, "no-side", "side").length, 0);
    assert.equal(records(quiet.root, "no-side").length, 2);
    assert.ok(readEvents(quiet.root).some((e) => e.action === "skip" && String(e.reason).startsWith("side request")));
  });

  it("a side request seen before the main conversation does not become the main chain", async () => {
    const probe = await fetch(`${tap.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "sk-ant-test-SECRET", "x-claude-code-session-id": "probe-first" },
      body: JSON.stringify({ model: "haiku", max_tokens: 1, messages: [{ role: "user", content: "quota" }] }),
    });
    await probe.arrayBuffer();
    await new Conversation(tap, "probe-first").say("real start");
    assert.deepEqual(records(tap.root, "probe-first").map(text).slice(0, 1), ["real start"]);
    assert.equal(records(tap.root, "probe-first")[0].parentUuid, null);
    assert.equal(records(tap.root, "probe-first", "side").length, 2);
  });

  it("two subagents interleaved with the main chain: each its own lineage, sidechain records with agentId", async () => {
    const main = new Conversation(tap, "agents");
    const a = new Conversation(tap, "agents", { headers: { "x-claude-code-agent-id": "agent-a", "x-claude-code-parent-agent-id": "root" } });
    const b = new Conversation(tap, "agents", { headers: { "x-claude-code-agent-id": "agent-b" } });
    await main.say("main 1");
    await a.say("a 1");
    await b.say("b 1");
    await main.say("main 2");
    await a.say("a 2");
    await Promise.all([b.say("b 2"), main.say("main 3")]);
    const m = records(tap.root, "agents");
    assert.deepEqual(ofType(m, "user").map(text), ["main 1", "main 2", "main 3"]);
    for (const [id, expected] of [["agent-a", ["a 1", "a 2"]], ["agent-b", ["b 1", "b 2"]]] as const) {
      const recs = records(tap.root, "agents", `subagents/agent-${id}`);
      assert.deepEqual(ofType(recs, "user").map(text), expected);
      assert.ok(recs.every((r) => r.isSidechain === true && r.agentId === id));
      assertNoDuplicates(recs);
    }
    assert.ok(records(tap.root, "agents", "subagents/agent-agent-a").every((r) => r.parentAgentId === "root"));
  });

  it("history the tap never saw is mirrored once from the request, marked reconstructed", async () => {
    const c = new Conversation(tap, "mid-session");
    c.messages.push({ role: "user", content: "old 1" }, { role: "assistant", content: [{ type: "text", text: "old answer" }] });
    await c.say("new");
    await c.say("newer");
    const recs = records(tap.root, "mid-session");
    assert.deepEqual(recs.map((r) => [text(r), Boolean(r.reconstructed)]), [
      ["old 1", true],
      ["old answer", true],
      ["new", false],
      [recs[3] ? text(recs[3]) : "", false],
      ["newer", false],
      [recs[5] ? text(recs[5]) : "", false],
    ]);
  });

  it("a diverged history declared as the main conversation becomes a new root, never merged", async () => {
    const c = new Conversation(tap, "diverged");
    await c.say("alpha");
    const other = new Conversation(tap, "diverged");
    await other.say("something else entirely");
    const recs = records(tap.root, "diverged");
    assert.equal(recs.filter((r) => r.parentUuid === null).length, 2);
    assertNoDuplicates(recs);
  });
});
