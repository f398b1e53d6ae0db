// The conversation tree (src/transcript/tree.ts): newest leaf, current branch, reading path across a
// compaction, and the outline that shows every record once. Runs unchanged under `bun test` and `deno test`.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { buildTree, currentBranch, flatten, type Item, outline, readingPath, shape } from "../../src/transcript/tree.ts";
import { firstPrompt } from "../../src/transcript/records.ts";
import { capturedTranscript } from "../support/captures.ts";
import { rec } from "../support/recover.ts";
import type { Rec } from "../support/claude.ts";
import { parseJsonl } from "../../src/protocol/json.ts";

const ids = (records: Record<string, unknown>[]) => records.map((r) => r.uuid);

describe("buildTree()", () => {
  it("a linear conversation: one root, its last record is the newest leaf", () => {
    const records = [rec("user", "u1", null, "hi"), rec("system", "s1", "u1", "env"), rec("assistant", "a1", "s1", [{ type: "text", text: "hello" }])];
    const tree = buildTree(records);
    assert.equal(tree.roots.length, 1);
    assert.equal(tree.newestLeaf?.uuid, "a1");
    assert.deepEqual(ids(currentBranch(tree)), ["u1", "s1", "a1"]);
    assert.deepEqual(shape(tree), { leaves: 1, forks: 0, compactions: 0 });
  });

  it("a rewind makes siblings; the current branch ends at the newest leaf, whatever the file order", () => {
    const u1 = rec("user", "u1", null, "first");
    const a1 = rec("assistant", "a1", "u1", [{ type: "text", text: "one" }]);
    const old = rec("user", "u2", "a1", "the path abandoned");
    const oldA = rec("assistant", "a2", "u2", [{ type: "text", text: "two" }]);
    const fresh = rec("user", "u3", "a1", "the path taken");
    const freshA = rec("assistant", "a3", "u3", [{ type: "text", text: "three" }]);
    // The newer branch sits earlier in the file: time decides, not position.
    const tree = buildTree([u1, a1, fresh, freshA, old, oldA].map((r, i) => (i >= 4 ? { ...r, timestamp: "2020-01-01T00:00:00.000Z" } : r)));
    assert.deepEqual(ids(currentBranch(tree)), ["u1", "a1", "u3", "a3"]);
    const items = outline(tree);
    assert.deepEqual(ids(flatten(items)), ["u1", "a1", "u2", "a2", "u3", "a3"], "the fork right after the record it forks from");
    const fork = items.find((i): i is Extract<Item, { kind: "branches" }> => i.kind === "branches")!;
    assert.equal(fork.at, "a1", "the other branch is shown where it forks");
    assert.deepEqual(ids(flatten(fork.branches[0])), ["u2", "a2"]);
    assert.deepEqual(shape(tree), { leaves: 2, forks: 1, compactions: 0 });
  });

  it("equal timestamps: the record later in the file is newer", () => {
    const t = "2026-01-01T00:00:00.000Z";
    const records = [
      rec("user", "u1", null, "x", { timestamp: t }),
      rec("assistant", "a1", "u1", [], { timestamp: t }),
      rec("assistant", "a2", "u1", [], { timestamp: t }),
    ];
    assert.equal(buildTree(records).newestLeaf?.uuid, "a2");
  });

  it("a compaction boundary is bridged by its logicalParentUuid when reading, not when loading the branch", () => {
    const records = [
      rec("user", "u1", null, "before"),
      rec("assistant", "a1", "u1", [{ type: "text", text: "kept tail" }]),
      { ...rec("system", "b1", null, undefined), subtype: "compact_boundary", logicalParentUuid: "a1", content: "Conversation compacted", message: undefined },
      rec("user", "s1", "b1", "This session is being continued from a previous conversation that ran out of context.", { isCompactSummary: true }),
      rec("user", "u2", "s1", "after"),
      rec("assistant", "a2", "u2", [{ type: "text", text: "done" }]),
    ];
    const tree = buildTree(records);
    assert.deepEqual(ids(currentBranch(tree)), ["b1", "s1", "u2", "a2"]);
    assert.deepEqual(ids(readingPath(tree)), ["u1", "a1", "b1", "s1", "u2", "a2"]);
    const items = outline(tree);
    assert.deepEqual(items.map((i) => i.kind), ["record", "record", "compaction", "record", "record", "record"]);
    assert.equal(shape(tree).compactions, 1);
  });

  it("a compaction summary without a boundary (an older mirror) is bridged to the newest earlier leaf", () => {
    const records = [
      rec("user", "u1", null, "before"),
      rec("assistant", "a1", "u1", [{ type: "text", text: "one" }]),
      rec("user", "s1", null, [{ type: "text", text: "This session is being continued from a previous conversation. Summary." }]),
      rec("assistant", "a2", "s1", [{ type: "text", text: "two" }]),
    ];
    const tree = buildTree(records);
    assert.deepEqual(ids(readingPath(tree)), ["u1", "a1", "s1", "a2"]);
    assert.deepEqual(outline(tree).map((i) => i.kind), ["record", "record", "compaction", "record", "record"]);
  });

  it("a parentUuid loop or an unknown parent never loses a record", () => {
    const records = [rec("user", "x", "y", "loop x"), rec("assistant", "y", "x", []), rec("user", "o", "missing-parent", "orphan")];
    const tree = buildTree(records);
    assert.deepEqual(new Set(ids(flatten(outline(tree)))), new Set(["x", "y", "o"]));
    assert.equal(tree.newestLeaf?.uuid, "o");
  });

  it("Claude Code's own transcript (compaction, rewind, metadata records): every uuid once, newest branch last", () => {
    const transcript = capturedTranscript("cc-2.1.328-interactive-compact-rewind");
    const tree = buildTree(transcript);
    const shown = ids(flatten(outline(tree)));
    const all = transcript.filter((r) => typeof r.uuid === "string").map((r) => r.uuid);
    assert.equal(shown.length, all.length);
    assert.deepEqual(new Set(shown), new Set(all));
    const texts = (readingPath(tree) as Rec[]).filter((r) => r.type === "user" && typeof r.message?.content === "string").map((r) => r.message.content);
    assert.ok(texts.includes("hello interactive world"), "the path reaches back across the compaction");
    assert.ok(texts.includes("a different path after rewind"));
    assert.ok(!texts.includes("after compaction message"), "the rewound message is a side branch, not the path");
    assert.equal(shape(tree).compactions, 1);
  });
});

describe("records", () => {
  it("firstPrompt() skips Claude Code's reminders, tool results and compaction summaries", () => {
    const records = [
      rec("user", "u0", null, [{ type: "text", text: "<system-reminder>\nnoise\n</system-reminder>" }]),
      rec("user", "u1", null, [{ type: "text", text: "<system-reminder>x</system-reminder>" }, { type: "text", text: "  fix the\n  build  " }]),
    ];
    assert.equal(firstPrompt(records), "fix the build");
    assert.equal(firstPrompt([rec("user", "t", null, [{ type: "tool_result", tool_use_id: "t1", content: "x" }])]), null);
    // It is shown as a title (list, search, headings): never with a control character.
    assert.equal(firstPrompt([rec("user", "c", null, "\x1b[31mred\x1b[0m prompt\x07 \x1b]0;owned\x07now")]), "red prompt now");
  });

  it("parseJsonl() counts torn and foreign lines without failing", () => {
    const parsed = parseJsonl('{"a":1}\n\n[1,2]\n{"b":\n"text"\n{"c":3}\n');
    assert.deepEqual(parsed.records, [{ a: 1 }, { c: 3 }]);
    assert.equal(parsed.malformed, 3);
  });
});
