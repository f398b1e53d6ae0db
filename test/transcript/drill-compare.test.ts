// The drill's verdict (docs/DESIGN.md "Drill"): the mirror's current branch, as Claude Code loads it, against the messages it
// sent on resume — passes what Claude Code legitimately adds or reshapes, names the first item missing or extra with its record
// and turn. The shapes of the resumed requests are those measured with 2.1.328 and 2.1.332; test/e2e/drill.test.ts runs the real ones.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { compareResume } from "../../src/transcript/restore-plan.ts";
import { buildTree, resumedBranch } from "../../src/transcript/tree.ts";
import { rec } from "../support/recover.ts";

const PROBE = "the probe";
const reminder = { type: "text", text: "<system-reminder>\nToday's date is 2026-01-02.\n</system-reminder>" };
const probe = { role: "user", content: [{ type: "text", text: PROBE, cache_control: { type: "ephemeral" } }] };

/** A session: a tool call, then a second prompt and its answer. */
const session = () => [
  rec("user", "u1", null, [reminder, { type: "text", text: "RUNTOOL please" }]),
  rec("system", "s1", "u1", "# Environment\nlinux"),
  rec("assistant", "a1", "s1", [{ type: "text", text: "I'll run it." }, { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "echo hi" } }]),
  rec("user", "r1", "a1", [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "hi" }] }]),
  rec("assistant", "a2", "r1", [{ type: "thinking", thinking: "…", signature: "x" }, { type: "text", text: "Done." }]),
  rec("user", "u2", "a2", "second turn"),
  rec("assistant", "a3", "u2", [{ type: "text", text: "Done again." }]),
];

/** What Claude Code sends for it on resume: the environment as a system message, a result as a string, the probe last. */
const resumed = () => [
  { role: "user", content: [reminder, { type: "text", text: "RUNTOOL please" }] },
  { role: "system", content: "# Environment\nlinux (was /old)" },
  { role: "assistant", content: [{ type: "text", text: "I'll run it." }, { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "echo hi" } }] },
  { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "hi", is_error: false }] },
  { role: "assistant", content: [{ type: "text", text: "Done." }] },
  { role: "user", content: "second turn" },
  { role: "assistant", content: [{ type: "text", text: "Done again." }] },
  probe,
];

const verdict = (records: Record<string, unknown>[], messages: unknown[]) => compareResume(resumedBranch(buildTree(records)), messages, PROBE);

describe("the drill's comparison", () => {
  it("passes the whole conversation, resent as Claude Code resends it", () => {
    assert.deepEqual(verdict(session(), resumed()), { ok: true, detail: "7 items resumed in order", turns: 2, compactedFirst: false });
  });

  it("passes a tool result whose reminder an older model had appended and the resume's model does not (claude-sonnet-4-5 against the default)", () => {
    const total = "\n\n<system-reminder>\n<total_tokens>14999840 tokens left</total_tokens>\n</system-reminder>";
    const records = session().map((
      r,
    ) => (r.uuid === "r1" ? rec("user", "r1", "a1", [{ type: "tool_result", tool_use_id: "toolu_1", content: `hi${total}` }]) : r));
    assert.equal(verdict(records, resumed()).ok, true, verdict(records, resumed()).detail);
    const older = resumed().map((
      m,
    ) => (JSON.stringify(m).includes("tool_result") ? { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: `hi${total}` }] } : m));
    assert.equal(verdict(session(), older).ok, true, "and the other way round");
    const other = resumed().map((
      m,
    ) => (JSON.stringify(m).includes("tool_result") ? { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "bye" }] } : m));
    assert.match(verdict(records, other).detail, /^missing tool result from record r1, turn 1: "hi"/);
  });

  it("names the first prompt Claude Code lost, with its record and turn", () => {
    const sent = resumed().filter((m) => m.content !== "second turn");
    assert.equal(verdict(session(), sent).detail, 'missing prompt from record u2, turn 2: "second turn"');
    assert.equal(verdict(session(), sent).ok, false);
  });

  it("names an answer Claude Code replaced with a filler", () => {
    const sent = resumed().map((
      m,
    ) => (JSON.stringify(m).includes("Done again.") ? { role: "assistant", content: [{ type: "text", text: "No response requested." }] } : m));
    assert.equal(
      verdict(session(), sent).detail,
      'missing answer from record a3, turn 2: "Done again." (Claude Code sent instead: answer in message 7 of the resumed request: "No response requested.")',
    );
  });

  it("names what Claude Code sent that the mirror does not have", () => {
    const sent = [...resumed().slice(0, -1), { role: "user", content: "a prompt nobody typed" }, probe];
    assert.equal(verdict(session(), sent).detail, 'extra prompt in message 8 of the resumed request: "a prompt nobody typed"');
    const early = resumed();
    early.splice(5, 0, { role: "user", content: "a prompt nobody typed" }, { role: "assistant", content: [{ type: "text", text: "Done." }] });
    assert.match(verdict(session(), early).detail, /^missing prompt from record u2, turn 2: "second turn" \(Claude Code sent instead: prompt in message 6/);
    const differs = resumed().map((
      m,
    ) => (m.role === "assistant" && JSON.stringify(m).includes("toolu_1") ? { ...m, content: [{ type: "text", text: "I'll run it." }] } : m));
    assert.match(verdict(session(), differs).detail, /^missing tool call from record a1, turn 1: "Bash \{\\"command\\":\\"echo hi\\"\}"/);
  });

  it("passes what Claude Code adds to an unfinished session: an error result for a call without one, a filler between two prompts", () => {
    const records = [...session().slice(0, 3), rec("user", "u2", "a1", "typed while it ran")];
    const sent = [
      ...resumed().slice(0, 3),
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", is_error: true, content: "[Tool call interrupted …]" }] },
      { role: "assistant", content: [{ type: "text", text: "No response requested." }] },
      { role: "user", content: "typed while it ran" },
      probe,
    ];
    assert.equal(verdict(records, sent).ok, true, verdict(records, sent).detail);
  });

  it("follows the current branch of a rewind, and a compaction as Claude Code loads it: the summary, the kept tail after it", () => {
    const records = [
      ...session(),
      rec("user", "old", "a3", "rewound away"),
      rec("system", "b1", null, "", {
        subtype: "compact_boundary",
        logicalParentUuid: "a3",
        compactMetadata: { preservedSegment: { headUuid: "u2", anchorUuid: "sum", tailUuid: "a3" } },
      }),
      rec("user", "sum", "b1", "This session is being continued from a previous conversation. Summary.", { isCompactSummary: true }),
      rec("user", "u3", "sum", "after the compaction"),
      rec("assistant", "a4", "u3", [{ type: "text", text: "Done 4." }]),
    ];
    const sent = [
      { role: "user", content: "This session is being continued from a previous conversation. Summary." },
      ...resumed().slice(5, 7),
      { role: "user", content: "after the compaction" },
      { role: "assistant", content: [{ type: "text", text: "Done 4." }] },
      probe,
    ];
    assert.deepEqual(verdict(records, sent), { ok: true, detail: "5 items resumed in order", turns: 3, compactedFirst: false });
    const compacting = [...sent.slice(0, -1), { role: "user", content: "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools." }];
    assert.equal(verdict(records, compacting).compactedFirst, true);
    assert.equal(verdict(records, compacting).ok, true);
  });

  it("an image the mirror kept only by reference is the note restore writes in its place", () => {
    const source = { type: "reference", media_type: "image/png", sha256: "ab".repeat(32) };
    const records = [
      rec("user", "u1", null, [{ type: "image", source }, { type: "text", text: "what is this?" }]),
      rec("assistant", "a1", "u1", [{ type: "text", text: "A cat." }]),
    ];
    const sent = [{
      role: "user",
      content: [{ type: "text", text: `[image image/png not kept by sessiontap, sha256 ${"ab".repeat(32)}]` }, { type: "text", text: "what is this?" }],
    }];
    assert.equal(verdict(records, [...sent, { role: "assistant", content: "A cat." }, probe]).ok, true);
    const image = [{
      role: "user",
      content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "" } }, { type: "text", text: "what is this?" }],
    }];
    assert.match(
      verdict(records, [...image, { role: "assistant", content: "A cat." }, probe]).detail,
      /^extra image in message 1 of the resumed request: "image" \(where the mirror has prompt from record u1, turn 1: "\[image image\/png/,
    );
  });
});
