import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KeyedQueue } from "../../src/utils/keyed-queue.ts";

const HOLD_MS = 80;

/** A queue of wake-ups whose work fails `failures` times, each failure naming HOLD_MS as its delay (as the store does). */
function wakeQueue(failures: number) {
  const runs: number[] = [];
  let release = () => {};
  let gate: Promise<void> | null = null;
  const queue = new KeyedQueue<null>(
    async (_, wakes) => {
      const handed = wakes.length; // as the store's drain does: what it was handed, not what arrived during it
      runs.push(handed);
      if (gate !== null) await gate;
      if (failures-- > 0) throw new Error("store away");
      return handed;
    },
    Number.POSITIVE_INFINITY,
    Date.now,
    { failed: () => HOLD_MS },
  );
  const block = () => (gate = new Promise<void>((resolve) => (release = () => ((gate = null), resolve()))));
  return { queue, runs, block, unblock: () => release() };
}

describe("KeyedQueue: wake-ups of one key coalesce", () => {
  it("keeps one wake-up however many are pushed while the key is held, and the next run takes that one", async () => {
    const { queue, runs } = wakeQueue(1);
    await queue.push("store", null);
    assert.deepEqual(runs, [1], "the first run failed and holds the key");
    for (let i = 0; i < 1000; i++) void queue.push("store", null);
    assert.equal(queue.waiting("store"), 1, "1000 commits while the store is away: still one wake-up");
    assert.equal(queue.size, 1);
    await queue.flush();
    assert.deepEqual(runs, [1, 1]);
    assert.equal(queue.size, 0);
  });

  it("keeps one wake-up beside the one a run in flight was handed, so what arrived during the run is run after it", async () => {
    const { queue, runs, block, unblock } = wakeQueue(0);
    block();
    const first = queue.push("store", null);
    await new Promise((resolve) => setTimeout(resolve, 10));
    for (let i = 0; i < 5; i++) void queue.push("store", null);
    assert.equal(queue.waiting("store"), 2, "the one in flight, and one for after it");
    unblock();
    await first;
    assert.deepEqual(runs, [1, 1]);
    assert.equal(queue.size, 0);
  });
});

describe("KeyedQueue: flush() waits out a held key", () => {
  it("resolves only after the held key ran again once its delay was out", async () => {
    const { queue, runs } = wakeQueue(1);
    await queue.push("store", null);
    const started = Date.now();
    await queue.flush();
    assert.ok(Date.now() - started >= HOLD_MS - 5, "the flush waited the delay the failure named");
    assert.deepEqual(runs, [1, 1], "and returned after the run that followed it");
    assert.equal(queue.waiting("store"), 0);
  });

  it("resolves when the queue is stopped while a key is held, handing its items over", async () => {
    const { queue } = wakeQueue(1);
    await queue.push("store", null);
    const flushed = queue.flush();
    assert.deepEqual(queue.stop(), [null]);
    await flushed;
  });
});
