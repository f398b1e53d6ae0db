// The call/reply helper both Workers use (src/utils/worker-call.ts), against a real Worker (test/support/calls-worker.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { WorkerCalls } from "../../src/utils/worker-call.ts";
import type { CallsFixture } from "../support/calls-worker.ts";

const URL_ = new URL("../support/calls-worker.ts", import.meta.url);

function start() {
  const died: string[] = [];
  const messages: unknown[] = [];
  const calls = new WorkerCalls<CallsFixture>(URL_, { greeting: "hi" }, {
    name: "the fixture",
    died: (why) => died.push(why),
    message: (m) => messages.push(m),
  });
  return { calls, died, messages };
}

describe("WorkerCalls and answerCalls", () => {
  it("a call resolves with what the method returned, built from the first message; an error rejects with its first line", async () => {
    const { calls } = start();
    try {
      assert.equal(await calls.call("hello", "you"), "hi, you");
      await assert.rejects(calls.call("refuse"), { message: "refused on cue" });
      assert.equal(await calls.call("hello", "again"), "hi, again", "a refusal is not a death");
    } finally {
      calls.close();
    }
  });

  it("a message that is not a call goes both ways without a reply", async () => {
    const { calls, messages } = start();
    try {
      calls.post({ note: 1 });
      await calls.call("hello", "x"); // replies come in order: the echo was posted before this reply
      assert.deepEqual(messages, [{ echoed: { note: 1 } }]);
    } finally {
      calls.close();
    }
  });

  it("a death is said once, rejects what waits and every later call", async () => {
    const { calls, died } = start();
    const waiting = calls.call("wait");
    assert.equal(await calls.call("crash"), "crashing");
    await assert.rejects(waiting, { message: /^the fixture stopped: .*crashed on cue/ });
    assert.equal(died.length, 1, died.join("\n"));
    assert.match(died[0], /crashed on cue/);
    await assert.rejects(calls.call("hello", "late"), { message: /^the fixture stopped: / });
    assert.equal(died.length, 1);
  });

  it("close rejects what waits without calling it a death", async () => {
    const { calls, died } = start();
    const waiting = calls.call("wait");
    await calls.call("hello", "x");
    calls.close("the test is done");
    await assert.rejects(waiting, { message: "the fixture stopped: the test is done" });
    assert.deepEqual(died, []);
  });
});
