// The one judge of Claude Code's transcript, alone (pure): which state a transcript is in from what was read of it and
// what the mirror expects and holds, what is not judged yet (still settling, noted before a tail-only read), and the
// guard's per-minute bound on looks.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LookBudget } from "../../src/guard/guard.ts";
import { type FileFacts, judge, type MirrorFacts, newFileFacts } from "../../src/transcript/transcript-state.ts";

const file = (extra: Partial<FileFacts> = {}): FileFacts => ({
  ...newFileFacts(),
  conversation: true,
  keys: new Set(["k1", "k2", "a:m1"]),
  own: new Set(["k1", "a:m1"]),
  ...extra,
});
const item = (keys: string[], at = 0, answer = false) => ({ keys, at, answer });
const mirror = (expected: MirrorFacts["expected"], holds: string[] | null = ["k1", "k2", "a:m1", "gone", "gone2", "a:m2"]): MirrorFacts => ({
  expected,
  holds: holds === null ? null : new Set(holds),
});
const NOW = { now: 10_000, settleMs: 1500 };

describe("the one judge of Claude Code's transcript", () => {
  it("missing: no file", () => {
    assert.deepEqual(judge(null, mirror([item(["k1"])]), NOW), { state: "missing", lacking: { prompts: 0, answers: 0 }, extra: 0 });
  });

  it("a stub: read from its first byte, no conversation; from a tail window nothing can be said of it", () => {
    assert.equal(judge(file({ conversation: false }), mirror([item(["k1"])]), NOW).state, "stub");
    assert.equal(judge(file({ conversation: false, whole: false }), mirror([]), NOW).state, "intact");
  });

  it("behind: settled prompts and answers none of whose keys the file holds, and the file holds nothing the mirror lacks", () => {
    const expected = [item(["k1"]), item(["x", "k2"]), item(["gone"]), item(["gone2"]), item(["a:m1"], 0, true), item(["a:m2"], 0, true)];
    assert.deepEqual(judge(file(), mirror(expected), NOW), { state: "behind", lacking: { prompts: 2, answers: 1 }, extra: 0 });
    assert.deepEqual(judge(file({ unread: 2 }), mirror(expected), NOW).lacking, { prompts: 0, answers: 1 }, "a line too long to read may hold one");
    assert.equal(judge(file(), mirror(expected.slice(0, 2)), NOW).state, "intact", "nothing lacking");
  });

  it("a file that lacks some of the mirror's branch but holds a prompt or answer the mirror does not is intact, not behind", () => {
    const v = judge(file({ own: new Set(["k1", "theirs"]) }), mirror([item(["gone"])]), NOW);
    assert.deepEqual(v, { state: "intact", lacking: { prompts: 1, answers: 0 }, extra: 1 });
    // The guard does not know everything the mirror holds (holds: null): it judges by what is lacking alone.
    assert.equal(judge(file({ own: new Set(["theirs"]) }), mirror([item(["gone"])], null), NOW).state, "behind");
  });

  it("a prompt still settling, or noted before a tail-only first read, is not judged", () => {
    assert.equal(judge(file(), mirror([item(["gone"], 9_000)]), NOW).state, "intact");
    assert.equal(judge(file(), mirror([item(["gone"], 8_500)]), NOW).state, "behind");
    assert.equal(judge(file({ whole: false }), mirror([item(["gone"], 4_000)]), { ...NOW, since: 5_000 }).state, "intact");
    assert.equal(judge(file({ whole: false }), mirror([item(["gone"], 6_000)]), { ...NOW, since: 5_000 }).state, "behind");
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
