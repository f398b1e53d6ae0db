// The crash window of a relay that never waits for the mirror (docs/DESIGN.md "Writes", docs/RELIABILITY.md
// "The crash window"): a real tap, as a child process, sends the client a whole answer whose record it
// cannot write yet — the test holds the conversation's writer lock, as another live tap would, so the
// write waits deterministically — and is killed (SIGKILL) before the write. Restarted, it is sent the
// client's next request, whose history carries that answer: the answer is then in the mirror once, marked
// reconstructed. Streamed and non-streaming answers alike.
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { DirLocks, selfOwner } from "../../src/storage/dir-lock.ts";
import { foldContent, textsOf } from "../support/client.ts";
import { serveTap, stopAll, type TapChild } from "../support/child.ts";
import { pollUntil } from "../support/poll.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords } from "../support/tap.ts";

type Message = { role: string; content: unknown };
type Rec = Record<string, unknown>;

describe("a tap killed between the client's last byte and the write", () => {
  let stub: StubUpstream;
  let dir: string;
  let root: string;
  const children: TapChild[] = [];
  const start = async () => {
    // A writer lock held by a live process is waited for this long before the commit waits in memory.
    const t = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { env: { HOME: dir, SESSIONTAP_LOCK_WAIT_MS: "60000" } });
    children.push(t.tap);
    return t;
  };
  beforeEach(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-window-`);
    root = `${dir}/mirror`;
  });
  afterEach(async () => {
    await stopAll(children);
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const stream of [true, false]) {
    it(`${stream ? "a streamed" : "a non-streaming (JSON)"} answer is recovered from the next request, once, reconstructed`, { timeout: 60_000 }, async () => {
      const session = `window-${stream ? "sse" : "json"}`;
      const sessionDir = `${root}/${session}`;
      /** One turn as Claude Code sends it: the whole history; returns the answer's content as the client read it. */
      const turn = async (url: string, history: Message[]): Promise<unknown[]> => {
        const response = await fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-claude-code-session-id": session },
          body: JSON.stringify({ model: "claude-test", max_tokens: 64, stream, messages: history }),
        });
        assert.equal(response.status, 200);
        const raw = new Uint8Array(await response.arrayBuffer());
        if (!stream) return (JSON.parse(new TextDecoder().decode(raw)) as { content: unknown[] }).content;
        assert.match(new TextDecoder().decode(raw), /"type":"message_stop"/, "the client has the whole answer");
        return foldContent(raw);
      };
      const history: Message[] = [{ role: "user", content: "first" }];
      let tap = await start();
      history.push({ role: "assistant", content: await turn(tap.url, history) });
      await pollUntil(() => allRecords(sessionDir), (recs) => recs.length === 2, 5000, "the first turn on disk");

      // Another live writer holds the conversation's lock (this test process): the next write must wait.
      mkdirSync(`${root}/.locks`, { recursive: true, mode: 0o700 });
      const locks = new DirLocks(nodeFs, root, { self: selfOwner(nodeFs), waitMs: 0, clock: Date.now });
      const lock = locks.pathFor(sessionDir);
      writeFileSync(lock, JSON.stringify(await selfOwner(nodeFs)));
      history.push({ role: "user", content: "second" });
      const answer = await turn(tap.url, history);
      history.push({ role: "assistant", content: answer });
      // The window: the client has every byte of the answer, the mirror nothing of the turn.
      assert.equal(allRecords(sessionDir).length, 2);
      tap.tap.child.kill("SIGKILL");
      assert.equal((await tap.tap.exited).signal, "SIGKILL");
      assert.equal(allRecords(sessionDir).length, 2, "killed before the write: the answer's record is lost");

      rmSync(lock);
      tap = await start();
      history.push({ role: "user", content: "third" });
      await turn(tap.url, history);
      const recs = await pollUntil(() => allRecords(sessionDir), (r) => r.length >= 6, 5000, "the third turn on disk");
      assert.deepEqual(recs.filter((r) => r.type === "user").map((r) => textsOf(r)[0]), ["first", "second", "third"], "each prompt once");
      const answers = recs.filter((r) => r.type === "assistant");
      assert.equal(answers.length, 3, "each answer once");
      const rebuilt = answers.filter((r) => r.reconstructed === true);
      assert.equal(rebuilt.length, 1, "only the answer the kill cut off is reconstructed");
      assert.deepEqual((rebuilt[0].message as { content: unknown }).content, answer, "the answer as the client read it");
      assert.equal(rebuilt[0], answers[1], "in its place, second of three");
      assert.equal(rebuilt[0].requestId, undefined, "only what the history holds");
      assert.deepEqual(answers.filter((r) => r !== rebuilt[0]).map((r) => typeof r.requestId), ["string", "string"]);
      const parent = recs.find((r) => r.type === "user" && textsOf(r as Rec)[0] === "second")!;
      assert.equal(rebuilt[0].parentUuid, parent.uuid, "it answers the prompt it answered");
    });
  }
});
