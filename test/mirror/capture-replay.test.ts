/**
 * Replays the real interactive Claude Code 2.1.328 session (a greeting, a tool call, /compact — its
 * summarising request sent twice —, a message, then a rewind to before that message and a different one)
 * through the tap, answering each request as the recorded stub did, and checks the mirror's tree against
 * the transcript Claude Code wrote for the same events.
 */
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type StubUpstream, textReply, toolUseReply } from "../support/stub-upstream.ts";
import { readTree, type TestTap, withTap } from "../support/tap.ts";
import { capturedRequests, capturedTranscript } from "../support/captures.ts";
import { textsOf } from "../support/client.ts";
import type { Rec } from "../support/claude.ts";

const CAPTURE = "cc-2.1.328-interactive-compact-rewind";

describe("replay of a real interactive session with /compact and a rewind", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let main: Rec[];
  let side: Rec[];
  let everything: Rec[];
  const transcript = capturedTranscript(CAPTURE);

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    const answers = new Map<string, Rec[]>();
    for (const r of transcript) if (r.type === "assistant") answers.set(r.message.id, [...(answers.get(r.message.id) ?? []), ...r.message.content]);
    for (const request of capturedRequests(CAPTURE)) {
      const id = `msg_mock_${request.n}`;
      const content = answers.get(id);
      if (content === undefined) stub.enqueue({ kind: "sse", chunks: textReply(`<analysis>a</analysis><summary>summary ${request.n}</summary>`, { id }) });
      else if (content.length === 1) stub.enqueue({ kind: "sse", chunks: textReply(content[0].text, { id }) });
      else stub.enqueue({ kind: "sse", chunks: toolUseReply(content[1].name, content[1].input, { id, preText: content[0].text, toolUseId: content[1].id }) });
      const { host: _host, "content-length": _length, ...headers } = request.headers;
      const response = await fetch(`${tap.url}${request.url}`, { method: "POST", headers, body: JSON.stringify(request.body) });
      assert.equal(response.status, 200);
      await response.arrayBuffer();
    }
    await tap.settled();
    const session = capturedRequests(CAPTURE)[0].headers["x-claude-code-session-id"];
    const tree = [...readTree(tap.root).entries()];
    everything = tree.filter(([p]) => p.startsWith(`${session}/`)).flatMap(([, r]) => r);
    main = tree.filter(([p]) => p.startsWith(`${session}/`) && p.split("/").length === 2).flatMap(([, r]) => r).filter((r) => r.subtype !== "api_message");
    side = tree.filter(([p]) => p.startsWith(`${session}/side/`)).flatMap(([, r]) => r);
  });

  it("every answer Claude Code kept is in the main chain exactly once; the summaries are side records", () => {
    const ids = main.filter((r) => r.type === "assistant").map((r) => r.message.id);
    assert.deepEqual(ids, ["msg_mock_1", "msg_mock_2", "msg_mock_3", "msg_mock_6", "msg_mock_7"]);
    // Claude Code's retry of the summarising request reworded its instruction: two exchanges, not one.
    assert.deepEqual(side.map((r) => [r.type, r.message.id ?? null]), [["user", null], ["assistant", "msg_mock_4"], ["user", null], [
      "assistant",
      "msg_mock_5",
    ]]);
    assert.ok(side.every((r) => r.isSidechain === true));
    assert.ok(textsOf(side[0]).at(-1)!.startsWith("CRITICAL: Respond with TEXT ONLY"));
    const fork = everything.find((r) => r.uuid === side[0].parentUuid)!;
    assert.equal(side[2].parentUuid, fork.uuid, "both hang from the same main record");
    assert.ok(main.includes(fork) || fork.subtype === "api_message", "a record of the main conversation");
    assert.equal(side[1].parentUuid, side[0].uuid);
  });

  it("every prompt the user typed appears once, in Claude Code's order", () => {
    const typed = transcript
      .filter((r) => r.type === "user" && typeof r.message.content === "string" && !r.isCompactSummary && !r.isMeta && !r.message.content.startsWith("<"))
      .map((r) => r.message.content);
    assert.deepEqual(typed, ["hello interactive world", "RUNTOOL now please", "after compaction message", "a different path after rewind"]);
    const userTexts = main.filter((r) => r.type === "user").map((r) => textsOf(r));
    for (const prompt of typed) {
      assert.equal(userTexts.filter((texts) => texts.some((t) => t === prompt || t.endsWith(prompt))).length, 1, prompt);
    }
  });

  it("the compaction looks as Claude Code records it: a boundary root, then the summary", () => {
    const ccBoundary = transcript.find((r) => r.subtype === "compact_boundary")!;
    const ccSummary = transcript.find((r) => r.isCompactSummary)!;
    assert.equal(ccBoundary.parentUuid, null);
    assert.equal(ccSummary.parentUuid, ccBoundary.uuid);
    const boundary = main.find((r) => r.subtype === "compact_boundary")!;
    const summary = main.find((r) => r.isCompactSummary === true)!;
    assert.equal(boundary.type, "system");
    assert.equal(boundary.parentUuid, null);
    const beforeBoundary = main[main.indexOf(boundary) - 1];
    assert.equal(boundary.logicalParentUuid, beforeBoundary.uuid, "logically follows the last record before it");
    assert.equal(beforeBoundary.message.id, "msg_mock_3");
    assert.equal(summary.parentUuid, boundary.uuid);
    assert.ok(textsOf(summary)[0].startsWith("This session is being continued"));
  });

  it("the rewind makes two user records share one parent, as in Claude Code's transcript", () => {
    const siblingsIn = (records: Rec[], isPrompt: (r: Rec) => boolean) => {
      const byParent = new Map<string, Rec[]>();
      for (const r of records.filter((x) => x.type === "user" && isPrompt(x))) byParent.set(r.parentUuid, [...(byParent.get(r.parentUuid) ?? []), r]);
      return [...byParent.values()].filter((group) => group.length > 1);
    };
    const cc = siblingsIn(transcript, (r) => typeof r.message.content === "string" && /after compaction|after rewind/.test(r.message.content));
    assert.equal(cc.length, 1);
    const ours = siblingsIn(main, (r) => textsOf(r).some((t) => /after compaction message|a different path after rewind/.test(t)));
    assert.equal(ours.length, 1, "one fork");
    assert.equal(ours[0].length, 2);
    const summary = main.find((r) => r.isCompactSummary === true)!;
    assert.equal(ours[0][0].parentUuid, summary.uuid, "both hang from the compacted segment's start");
  });

  it("nothing was written twice and every parent exists", () => {
    const all = everything;
    assert.equal(new Set(all.map((r) => r.uuid)).size, all.length);
    const uuids = new Set(all.map((r) => r.uuid));
    for (const r of all) assert.ok(r.parentUuid === null || uuids.has(r.parentUuid), `parent of ${r.type} exists`);
  });
});
