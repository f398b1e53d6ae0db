// The guard's verdict and its budget, alone (pure): which states a transcript is in from what was read of
// it, what is not judged yet (a prompt still settling, one noted before a tail-only read), and the
// per-minute bound on looks.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LookBudget } from "../../src/guard/look-budget.ts";
import { type FileKnowledge, transcriptVerdict } from "../../src/guard/verdict.ts";

const file = (extra: Partial<FileKnowledge> = {}): FileKnowledge => ({
  kind: "read",
  seen: true,
  fromStart: true,
  conversation: true,
  startedAt: 0,
  keys: new Set(["k1", "k2"]),
  oversizedPrompts: 0,
  ...extra,
});
const SETTLE = 1500;

describe("guard: the verdict on a transcript", () => {
  it("missing only once it was seen; a file never found is not judged", () => {
    assert.deepEqual(transcriptVerdict(file({ kind: "missing" }), [], 10_000, SETTLE), { state: "missing" });
    assert.equal(transcriptVerdict(file({ kind: "missing", seen: false }), [], 10_000, SETTLE), null);
    assert.equal(transcriptVerdict(file({ kind: "not-a-file" }), [], 10_000, SETTLE), null);
  });

  it("a stub: read from the start, no conversation; from a tail window, nothing can be said of it", () => {
    assert.deepEqual(transcriptVerdict(file({ conversation: false }), [], 10_000, SETTLE), { state: "stub" });
    assert.equal(transcriptVerdict(file({ conversation: false, fromStart: false }), [], 10_000, SETTLE), null);
  });

  it("behind: counts settled prompts none of whose candidates is held", () => {
    const prompts = [{ keys: ["k1"], seenAt: 0 }, { keys: ["x", "k2"], seenAt: 0 }, { keys: ["gone"], seenAt: 0 }, { keys: ["gone2"], seenAt: 0 }];
    assert.deepEqual(transcriptVerdict(file(), prompts, 10_000, SETTLE), { state: "behind", lacking: 2 });
    assert.deepEqual(
      transcriptVerdict(file({ oversizedPrompts: 1 }), prompts, 10_000, SETTLE),
      { state: "behind", lacking: 1 },
      "a line too long to read may hold one",
    );
    assert.equal(transcriptVerdict(file(), prompts.slice(0, 2), 10_000, SETTLE), null);
  });

  it("a prompt still settling, or noted before a tail-only first read, is not judged", () => {
    assert.equal(transcriptVerdict(file(), [{ keys: ["gone"], seenAt: 9_000 }], 10_000, SETTLE), null);
    assert.deepEqual(transcriptVerdict(file(), [{ keys: ["gone"], seenAt: 8_500 }], 10_000, SETTLE), { state: "behind", lacking: 1 });
    assert.equal(transcriptVerdict(file({ fromStart: false, startedAt: 5_000 }), [{ keys: ["gone"], seenAt: 4_000 }], 10_000, SETTLE), null);
    assert.deepEqual(transcriptVerdict(file({ fromStart: false, startedAt: 5_000 }), [{ keys: ["gone"], seenAt: 6_000 }], 10_000, SETTLE), {
      state: "behind",
      lacking: 1,
    });
  });
});

describe("guard: the look budget", () => {
  it("allows `max` looks in any minute, then says how long to wait", () => {
    const b = new LookBudget(2);
    assert.equal(b.take(1000), 0);
    assert.equal(b.take(2000), 0);
    assert.equal(b.take(3000), 58_001);
    assert.equal(b.take(61_000), 0, "the first look left the window");
    assert.equal(b.take(61_500), 500 + 1);
  });
});
