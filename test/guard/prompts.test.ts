// The guard's comparison on Claude Code 2.1.328's real records (test/fixtures/claude-code): which text of
// a request is the typed prompt, which prompts a transcript holds, and that every prompt the real CLI sent
// through a compaction, a rewind and a tool call is found in the transcript it wrote itself (no false alarm).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { answerKey, mirrorFacts, newFileFacts, noteLine, promptCandidates, promptKey } from "../../src/transcript/transcript-state.ts";
import { buildTree } from "../../src/transcript/tree.ts";
import { hashMessages } from "../../src/protocol/lineage.ts";
import { capturedRequests, capturedTranscript } from "../support/captures.ts";
import { rec } from "../support/recover.ts";

const INTERACTIVE = "cc-2.1.328-interactive-compact-rewind";
const TOOL = "cc-2.1.328-tool-session";
const encode = (r: unknown) => new TextEncoder().encode(JSON.stringify(r));
/** What reading a transcript's records line by line finds. */
function factsOf(records: unknown[]) {
  const f = newFileFacts();
  for (const r of records) noteLine(f, encode(r), false);
  return f;
}
const keysOf = (capture: string) => factsOf(capturedTranscript(capture)).keys;

describe("guard: typed prompts on Claude Code's real records", () => {
  it("the typed prompt of each real request is its last user message's own text, never the injected context", () => {
    const prompts = capturedRequests(INTERACTIVE).map((r) => promptCandidates(r.body.messages));
    assert.deepEqual(prompts, [
      ["hello interactive world"],
      ["RUNTOOL now please"],
      [], // the tool result goes back: no new prompt
      [], // the summarising request (a side request besides) asks for a summary: not typed
      [],
      ["after compaction message"], // behind the reminder, the /compact caveat, command and output
      ["a different path after rewind"],
    ]);
    assert.deepEqual(capturedRequests(TOOL).map((r) => promptCandidates(r.body.messages)), [["RUNTOOL please"], [], ["and now a plain follow-up"]]);
  });

  it("the hashed messages the mirror commits give the same prompts (what the guard reads from a commit)", () => {
    for (const r of capturedRequests(INTERACTIVE)) {
      assert.deepEqual(promptCandidates(hashMessages(r.body.messages)), promptCandidates(r.body.messages));
    }
  });

  it("every prompt the real CLI sent is held by the transcript it wrote: through a tool call, /compact and a rewind", () => {
    for (const capture of [INTERACTIVE, TOOL]) {
      const held = keysOf(capture);
      for (const r of capturedRequests(capture)) {
        for (const p of promptCandidates(r.body.messages)) assert.ok(held.has(promptKey(p)), `${capture}: "${p}" not found in the transcript`);
      }
    }
  });

  it("a transcript's line reader tells conversation from metadata, and holds each answer by its message id", () => {
    const records = capturedTranscript(INTERACTIVE);
    const f = factsOf(records);
    assert.equal(f.records, records.filter((r) => (r.type === "user" || r.type === "assistant") && typeof r.message === "object").length);
    assert.ok(f.conversation);
    for (const id of ["msg_mock_1", "msg_mock_2", "msg_mock_3", "msg_mock_6", "msg_mock_7"]) {
      assert.ok(f.keys.has(answerKey(id)) && f.own.has(answerKey(id)), id);
    }
    assert.equal(factsOf(records.filter((r) => typeof r.uuid !== "string")).conversation, false, "metadata records only: no conversation");
    const torn = newFileFacts();
    noteLine(torn, new TextEncoder().encode('{"parentUuid":"x","type":"user","message":{"role":"us'), false);
    assert.deepEqual([torn.conversation, torn.keys.size, torn.torn], [false, 0, true], "a torn line holds nothing");
  });

  it("a prompt is compared on its text alone: whitespace around it and line endings do not matter", () => {
    assert.equal(promptKey("  fix the build\r\nplease \n"), promptKey("fix the build\nplease"));
    assert.notEqual(promptKey("fix the build"), promptKey("fix the build!"));
    // A queued prompt is recorded by Claude Code as a queue operation; it counts as held.
    assert.deepEqual([...factsOf([{ type: "queue-operation", operation: "enqueue", content: "later please" }]).keys], [promptKey("later please")]);
    assert.deepEqual([...factsOf([{ type: "attachment", attachment: { type: "queued_command", prompt: "queued text" } }]).keys], [promptKey("queued text")]);
  });

  it("the mirror's prompts are its live user records: not tool results, summaries, reconstructed history or injected context", () => {
    const records = [
      rec("user", "u1", null, [{ type: "text", text: "<system-reminder>\nctx\n</system-reminder>\n" }, { type: "text", text: "typed one" }]),
      rec("assistant", "a1", "u1", [{ type: "text", text: "ok" }]),
      rec("user", "u2", "a1", [{ type: "tool_result", tool_use_id: "t", content: "out" }]),
      rec("user", "u3", "u2", "rebuilt", { reconstructed: true }),
      rec("user", "u4", "u3", "This session is being continued from a previous conversation…", { isCompactSummary: true }),
      rec("user", "u5", "u4", "typed two"),
      rec("assistant", "a2", "u5", [{ type: "text", text: "cut" }]),
    ];
    (records[6].message as Record<string, unknown>).stop_reason = "interrupted";
    const expected = mirrorFacts(buildTree(records)).expected;
    assert.deepEqual(expected.filter((e) => !e.answer).map((e) => e.keys), [[promptKey("typed one")], [promptKey("typed two")]]);
    assert.deepEqual(expected.filter((e) => e.answer).map((e) => e.keys), [[answerKey("msg_a1")]], "whole answers by their message id, not one cut short");
  });
});
