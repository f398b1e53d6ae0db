import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Alarm, REMIND_MS } from "../../src/utils/alarm.ts";

describe("Alarm: one line when failures start, a reminder at most once a minute, one line on recovery", () => {
  it("says the first failure at once, then stays quiet for a minute however often it fails, then reminds", () => {
    let now = 1_000_000;
    const lines: string[] = [];
    const alarm = new Alarm(() => now, (l) => lines.push(l));
    const say = (first: boolean, n: number) => `${first ? "failed" : "still failing"} ${n}`;
    alarm.fail("E1", say);
    for (let i = 0; i < 50; i++) {
      now += 1000;
      alarm.fail("E2", say);
    }
    assert.deepEqual(lines, ["failed 1"], "50 more failures within the minute: no more lines");
    now += REMIND_MS;
    alarm.fail("E3", say);
    assert.deepEqual(lines, ["failed 1", "still failing 52"]);
    assert.equal(alarm.state().consecutiveFailures, 52);
    assert.equal(alarm.state().lastError, "E3");
    assert.equal(alarm.state().failingSince, new Date(1_000_000).toISOString());
  });

  it("says recovery once, with the count, and a later failure is a first failure again", () => {
    let now = 0;
    const lines: string[] = [];
    const alarm = new Alarm(() => now, (l) => lines.push(l));
    alarm.ok(() => "recovered?"); // nothing was failing: nothing to say
    alarm.fail("E", (first) => (first ? "down" : "still"));
    alarm.fail("E", (first) => (first ? "down" : "still"));
    now = 5000;
    alarm.ok((n, ms) => `up after ${n} in ${ms} ms`);
    alarm.ok((n) => `up again ${n}`);
    assert.deepEqual(lines, ["down", "up after 2 in 5000 ms"]);
    assert.equal(alarm.failing, false);
    assert.equal(alarm.state().consecutiveFailures, 0);
    assert.equal(alarm.state().lastSuccess, new Date(5000).toISOString());
    alarm.fail("E", (first) => (first ? "down" : "still"));
    assert.equal(lines.at(-1), "down", "a new run of failures starts with its own first line");
  });
});
