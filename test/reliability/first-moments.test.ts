// A fresh tap's first moments (docs/RELIABILITY.md "An answer is durable within ~250 ms, from the start"): a real
// tap process is sent several sessions' turns the moment it listens and is killed (SIGKILL) soon after; every answer
// whose last byte the client had 250 ms before the kill is in the mirror tree, though no later request could rebuild it.
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { spawnTap, stopAll, type TapChild } from "../support/child.ts";
import { foldContent } from "../support/client.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords } from "../support/tap.ts";

type Message = { role: string; content: unknown };
/** An answer as the client had it: its message id and when its last byte came. */
type Answered = { session: string; id: string; at: number };

const ROUNDS = 4;
const SESSIONS = 4;
/** A session's first turns (a prompt, a tool call or two): a flood of turns beyond that queues behind its own writes, however old the tap. */
const TURNS = 3;
/** The kill comes this long after the tap listens: answers of its first ~150 ms are 250 ms old by then. */
const KILL_AFTER_MS = 400;
const DURABLE_MS = 250;

describe("a fresh tap killed in its first moments", () => {
  let stub: StubUpstream;
  let dir: string;
  const children: TapChild[] = [];
  beforeEach(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-first-`);
  });
  afterEach(async () => {
    await stopAll(children);
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Sends `session`'s turns one after another (each with the whole history) until `stop()`; records each whole answer. */
  const converse = async (url: string, session: string, stop: () => boolean, answered: Answered[]) => {
    const history: Message[] = [];
    for (let n = 0; n < TURNS && !stop(); n++) {
      history.push({ role: "user", content: `turn ${n}` });
      let raw: Uint8Array;
      try {
        const response = await fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-claude-code-session-id": session },
          body: JSON.stringify({ model: "claude-test", max_tokens: 64, stream: true, messages: history }),
        });
        raw = new Uint8Array(await response.arrayBuffer());
      } catch {
        return; // the kill cut this turn off: the client never had it whole
      }
      const at = Date.now();
      const text = new TextDecoder().decode(raw);
      if (!text.includes('"type":"message_stop"')) return;
      answered.push({ session, id: text.match(/"id":"(msg_[^"]+)"/)![1], at });
      history.push({ role: "assistant", content: foldContent(raw) });
    }
  };

  /** The message ids of every assistant record under `root`. */
  const mirroredIds = (root: string) => new Set(allRecords(root).filter((r) => r.type === "assistant").map((r) => (r.message as { id: string }).id));

  it(`every answer the client had ${DURABLE_MS} ms before the kill is on disk, in ${ROUNDS} rounds`, { timeout: 120_000 }, async () => {
    let checked = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const root = `${dir}/mirror-${round}`;
      const tap = spawnTap(["serve", "--port", "0", "--upstream", stub.url, "--mirror-dir", root], { env: { HOME: dir } });
      children.push(tap);
      const url = (await tap.waitFor("stdout", /export ANTHROPIC_BASE_URL=(http:\/\/127\.0\.0\.1:\d+)\n/))[1];
      const listening = Date.now();
      let killed = false;
      const answered: Answered[] = [];
      const sessions = Array.from({ length: SESSIONS }, (_, i) => converse(url, `first-${round}-${i}`, () => killed, answered));
      await new Promise((resolve) => setTimeout(resolve, KILL_AFTER_MS));
      tap.child.kill("SIGKILL");
      const killedAt = Date.now();
      killed = true;
      assert.equal((await tap.exited).signal, "SIGKILL");
      await Promise.all(sessions);
      const due = answered.filter((a) => a.at <= killedAt - DURABLE_MS);
      assert.ok(due.length >= SESSIONS, `round ${round}: answers came in the tap's first ${KILL_AFTER_MS - DURABLE_MS} ms (${due.length})`);
      const ids = mirroredIds(root);
      const missing = due.filter((a) => !ids.has(a.id)).map((a) => `${a.session} ${a.id} (${a.at - listening} ms after listening)`);
      assert.deepEqual(missing, [], `round ${round}: answers the client had >= ${DURABLE_MS} ms before the kill are on disk`);
      checked += due.length;
    }
    assert.ok(checked >= ROUNDS * SESSIONS);
  });

  it(`in a tap's first second an answer is on disk within ${DURABLE_MS} ms of its last byte`, { timeout: 60_000 }, async () => {
    const root = `${dir}/mirror`;
    const tap = spawnTap(["serve", "--port", "0", "--upstream", stub.url, "--mirror-dir", root], { env: { HOME: dir } });
    children.push(tap);
    const url = (await tap.waitFor("stdout", /export ANTHROPIC_BASE_URL=(http:\/\/127\.0\.0\.1:\d+)\n/))[1];
    const answered: Answered[] = [];
    await Promise.all(Array.from({ length: SESSIONS }, (_, i) => converse(url, `first-${i}`, () => answered.length >= SESSIONS, answered)));
    // The tree is read every 5 ms (bounded): the delay from an answer's last byte to its record on disk, to within that.
    const delays = new Map<string, number>();
    for (let i = 0; i < 1000 && delays.size < answered.length; i++) {
      const ids = mirroredIds(root);
      for (const a of answered) if (ids.has(a.id) && !delays.has(a.id)) delays.set(a.id, Date.now() - a.at);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(delays.size, answered.length, "every answer on disk within 5 s");
    const worst = Math.max(...delays.values());
    process.stderr.write(`first answers on disk ${[...delays.values()].join(", ")} ms after their last byte\n`);
    assert.ok(worst <= DURABLE_MS, `on disk within ${DURABLE_MS} ms of the last byte (worst ${worst} ms)`);
  });
});
