// What `sessiontap restore` writes (src/transcript/restore-plan.ts): the current branch's user and assistant
// records, re-linked across what is left out, in Claude Code's shape, with content the API accepts. The
// real CLI resuming from it is test/e2e/restore-round-trip.test.ts. Runs under Bun and Deno.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planRestore } from "../../src/transcript/restore-plan.ts";
import { buildTree } from "../../src/transcript/tree.ts";
import { rec } from "../support/recover.ts";
import type { Rec } from "../support/claude.ts";

const target = { sessionId: "sess-1", cwd: "/new/cwd" };
const shape = (records: Rec[]) => records.map((r) => `${r.type}:${r.uuid}<-${r.parentUuid}`);

describe("planRestore()", () => {
  it("writes a system message's context as attachment records of its turn, each record's parent the one before it", () => {
    const records = [
      rec("user", "u1", null, "hi"),
      rec("system", "s1", "u1", [{ type: "text", text: "Today's date is 2026-12-01." }]),
      rec("assistant", "a1", "s1", [{ type: "text", text: "hello" }]),
      rec("user", "u2", "a1", "more"),
      rec("system", "s2", "u2", "an unknown kind of context"),
      rec("assistant", "a2", "s2", [{ type: "text", text: "done" }]),
    ];
    const plan = planRestore(buildTree(records), target);
    const [d1, d2] = plan.records.filter((r) => r.type === "attachment").map((r) => r.uuid);
    assert.deepEqual(shape(plan.records), [
      "user:u1<-null",
      `attachment:${d1}<-u1`,
      `assistant:a1<-${d1}`,
      "user:u2<-a1",
      `attachment:${d2}<-u2`,
      `assistant:a2<-${d2}`,
    ]);
    const [date, unknown] = plan.records.filter((r) => r.type === "attachment");
    assert.deepEqual(date.attachment, { type: "date", date: "2026-12-01" });
    assert.deepEqual(date.rendered, [{ content: "<system-reminder>\nToday's date is 2026-12-01.\n</system-reminder>" }]);
    assert.equal(date.renderedRole, "system");
    assert.deepEqual(unknown.attachment, { type: "sessiontap_context" }, "a kind restore does not know keeps its text");
    assert.deepEqual(unknown.rendered, [{ content: "<system-reminder>\nan unknown kind of context\n</system-reminder>" }]);
    assert.equal(plan.leafUuid, "a2");
    for (const r of plan.records) {
      assert.equal(r.sessionId, "sess-1");
      assert.equal(r.cwd, "/new/cwd");
      assert.equal(r.isSidechain, false);
      assert.equal(r.subtype, undefined);
    }
  });

  it("writes the current branch only: a rewound exchange does not come back", () => {
    const records = [
      rec("user", "u1", null, "start"),
      rec("assistant", "a1", "u1", [{ type: "text", text: "one" }]),
      rec("user", "old", "a1", "abandoned"),
      rec("assistant", "oldA", "old", [{ type: "text", text: "abandoned answer" }]),
      rec("user", "new", "a1", "taken"),
      rec("assistant", "newA", "new", [{ type: "text", text: "taken answer" }]),
    ];
    assert.deepEqual(planRestore(buildTree(records), target).records.map((r) => r.uuid), ["u1", "a1", "new", "newA"]);
  });

  it("keeps a compaction as Claude Code records it: the history before, the boundary, the summary and after", () => {
    const records = [
      rec("user", "u1", null, "before"),
      rec("system", "s1", "u1", "env"),
      rec("assistant", "a1", "s1", [{ type: "text", text: "kept tail" }]),
      {
        ...rec("system", "b1", null, undefined),
        subtype: "compact_boundary",
        message: undefined,
        content: "Conversation compacted",
        logicalParentUuid: "a1",
        compactMetadata: { preservedSegment: { headUuid: "a1", anchorUuid: "sum", tailUuid: "a1" } },
      },
      rec("user", "sum", "b1", "This session is being continued from a previous conversation.", { isCompactSummary: true }),
      rec("user", "u2", "sum", "after"),
      rec("system", "s2", "u2", "env"),
      rec("assistant", "a2", "s2", [{ type: "text", text: "done" }]),
    ];
    const plan = planRestore(buildTree(records), target) as { records: Rec[] };
    const [e1, e2] = plan.records.filter((r) => r.type === "attachment").map((r) => r.uuid);
    assert.deepEqual(shape(plan.records), [
      "user:u1<-null",
      `attachment:${e1}<-u1`,
      `assistant:a1<-${e1}`,
      "system:b1<-null",
      "user:sum<-b1",
      "user:u2<-sum",
      `attachment:${e2}<-u2`,
      `assistant:a2<-${e2}`,
    ]);
    const boundary = plan.records[3];
    assert.equal(boundary.logicalParentUuid, "a1");
    assert.deepEqual(boundary.compactMetadata.preservedSegment, { headUuid: "a1", anchorUuid: "sum", tailUuid: "a1" });
    assert.equal(boundary.sessionId, "sess-1");
  });

  it("re-points a kept tail that ends on a system message at the record written for it, and drops one it cannot place", () => {
    const base = [
      rec("user", "u1", null, "before"),
      rec("assistant", "a1", "u1", [{ type: "text", text: "tail" }]),
      rec("system", "s1", "a1", "turn metadata"),
    ];
    const boundary = (segment: Rec) => ({
      ...rec("system", "b1", null, undefined),
      subtype: "compact_boundary",
      message: undefined,
      logicalParentUuid: "s1",
      compactMetadata: { trigger: "auto", preservedSegment: segment },
    });
    const after = [rec("user", "sum", "b1", "This session is being continued from a previous conversation.", { isCompactSummary: true })];
    const moved = planRestore(buildTree([...base, boundary({ headUuid: "a1", anchorUuid: "sum", tailUuid: "s1" }), ...after]), target).records as Rec[];
    const context = moved.find((r) => r.type === "attachment")!.uuid; // the system message's context, where it was
    assert.deepEqual(moved.find((r) => r.uuid === "b1")!.compactMetadata, {
      trigger: "auto",
      preservedSegment: { headUuid: "a1", anchorUuid: "sum", tailUuid: context },
    });
    assert.equal(moved.find((r) => r.uuid === "b1")!.logicalParentUuid, context);
    const lost = planRestore(buildTree([...base, boundary({ headUuid: "zz", anchorUuid: "sum", tailUuid: "zz" }), ...after]), target).records as Rec[];
    assert.deepEqual(lost.find((r) => r.uuid === "b1")!.compactMetadata, { trigger: "auto" });
  });

  it("makes content the API accepts: references become notes, the mirror's own keys go, empty answers are left out", () => {
    const image = { type: "image", source: { type: "reference", sha256: "ab".repeat(32), media_type: "image/png" } };
    const records: Rec[] = [
      rec("user", "u1", null, [{ type: "text", text: "look" }, image, { type: "tool_result", tool_use_id: "t0", content: [image] }]),
      rec("assistant", "a1", "u1", [{ type: "tool_use", id: "t1", name: "Bash", input: {}, sessiontap_partial_json: '{"comm' }], { message: undefined }),
      rec("assistant", "cut", "a1", []),
    ];
    records[1].message = {
      type: "message",
      role: "assistant",
      content: [{ type: "tool_use", id: "t1", name: "Bash", input: {}, sessiontap_partial_json: '{"comm' }],
      stop_reason: "interrupted",
      sessiontap_events: [],
    };
    const plan = planRestore(buildTree(records), target) as { records: Rec[] };
    assert.deepEqual(plan.records.map((r) => r.uuid), ["u1", "a1"]);
    const [user, assistant] = plan.records;
    const note = { type: "text", text: `[image image/png not kept by sessiontap, sha256 ${"ab".repeat(32)}]` };
    assert.deepEqual(user.message.content, [{ type: "text", text: "look" }, note, { type: "tool_result", tool_use_id: "t0", content: [note] }]);
    assert.deepEqual(assistant.message, {
      type: "message",
      role: "assistant",
      content: [{ type: "tool_use", id: "t1", name: "Bash", input: {} }],
      stop_reason: "interrupted",
    });
    assert.equal(records[1].message.content[0].sessiontap_partial_json, '{"comm', "the mirror's records are not changed");
  });
});
