/**
 * Real processes on one mirror root: two taps writing one session, a lock left by a dead process, a lock
 * held by a live one, and kill -9 at random moments through 200 streamed turns.
 */
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { DirLocks, selfOwner } from "../../src/storage/dir-lock.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, readEvents, readTree } from "../support/tap.ts";
import { serveTap, stopAll, type TapChild } from "../support/child.ts";
import { pollUntil } from "../support/poll.ts";
import { alternateAndRace, Conversation, textsOf } from "../support/client.ts";

type Rec = Record<string, unknown>;
const users = (recs: Rec[]) => recs.filter((r) => r.type === "user").map((r) => textsOf(r)[0]);

describe("processes sharing one mirror root", () => {
  let stub: StubUpstream;
  let dir: string;
  let root: string;
  const children: TapChild[] = [];
  const start = async (env: Record<string, string> = {}) => {
    const t = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { env });
    children.push(t.tap);
    return t;
  };
  beforeEach(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-procs-`);
    root = `${dir}/mirror`;
  });
  afterEach(async () => {
    await stopAll(children);
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("two taps serving alternate turns of one session write each record exactly once", { timeout: 60_000 }, async () => {
    const [a, b] = await Promise.all([start(), start()]);
    const written = (n: number) => pollUntil(() => allRecords(`${root}/shared`), (recs) => recs.length >= n, 5000, `${n} records`);
    const { statuses, racers } = await alternateAndRace(a.url, b.url, "shared", 20, written);
    assert.ok(statuses.every((status) => status === 200));
    // Both at once, from the same point: two branches, never interleaved bytes.
    assert.ok(racers.every((status) => status === 200));
    for (const c of children) c.signal("SIGTERM");
    for (const c of children) assert.equal((await c.exit()).code, 0);
    const recs = allRecords(`${root}/shared`);
    assert.deepEqual(users(recs).slice(0, 20), Array.from({ length: 20 }, (_, i) => `turn ${i}`));
    assert.equal(recs.length, 40 + 8);
    assert.equal(recs.filter((r) => r.reconstructed).length, 0, "each tap saw the other's records");
    assert.equal(new Set(recs.map((r) => r.uuid)).size, recs.length);
    for (const file of readdirSync(`${root}/shared`)) {
      for (const line of readFileSync(`${root}/shared/${file}`, "utf8").split("\n").filter(Boolean)) JSON.parse(line);
    }
  });

  it("a lock left by a dead process is taken over; one held by a live process makes the tap wait, keep, and retry", { timeout: 30_000 }, async () => {
    const sessionDir = `${root}/locked`;
    mkdirSync(`${root}/.locks`, { recursive: true });
    const locks = new DirLocks(nodeFs, root, { self: selfOwner(nodeFs), waitMs: 0, clock: Date.now });
    const dead = spawnSync("sh", ["-c", "exit 0"]).pid;
    writeFileSync(locks.pathFor(sessionDir), JSON.stringify({ pid: dead, start: "1", host: (await selfOwner(nodeFs)).host }));
    const { url } = await start({ SESSIONTAP_LOCK_WAIT_MS: "300" });
    assert.equal((await new Conversation(url, "locked").say("after a dead writer")).status, 200);
    assert.equal((await pollUntil(() => allRecords(sessionDir), (recs) => recs.length >= 2, 5000)).length, 2, "the stale lock was taken over");
    assert.equal(await pollUntil(() => existsSync(locks.pathFor(sessionDir)), (held) => !held, 5000), false, "and released");

    // Now a live owner (this test process) holds it.
    writeFileSync(locks.pathFor(sessionDir), JSON.stringify(await selfOwner(nodeFs)));
    const c = new Conversation(url, "locked");
    c.messages.push(...(allRecords(sessionDir).map((r) => r.message) as { role: string; content: unknown }[]));
    assert.equal((await c.say("while locked")).status, 200, "the client is unaffected");
    const locked = await pollUntil(
      () => readEvents(root),
      (events) => events.some((e) => e.action === "error" && String(e.error).startsWith("ELOCKED")),
      5_000,
    );
    assert.ok(locked.some((e) => e.action === "error" && String(e.error).startsWith("ELOCKED")), "the wait is in the events log");
    assert.equal(allRecords(sessionDir).length, 2, "nothing written while another writer holds the lock");
    rmSync(locks.pathFor(sessionDir));
    const after = await pollUntil(() => allRecords(sessionDir), (recs) => recs.length >= 4, 10_000);
    assert.deepEqual(users(after), ["after a dead writer", "while locked"], "the kept records were written once the lock was free");
  });

  it("kill -9 at random moments through 200 streamed turns: no completed answer lost, none doubled, torn tails moved aside", { timeout: 180_000 }, async () => {
    let seed = 20261130;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    let tap = await start();
    const completed = new Set<string>();
    let kills = 0;
    let torn = 0;
    let tornDue = false;
    const history: { role: string; content: unknown }[] = [];
    for (let turn = 0; turn < 200; turn++) {
      history.push({ role: "user", content: `turn ${turn}` });
      for (let attempt = 0; attempt < 5; attempt++) {
        const c = new Conversation(tap.url, "crashy");
        c.messages.push(...history);
        const killNow = random() < 0.06;
        const sending = c.send();
        if (killNow) setTimeout(() => tap.tap.child.kill("SIGKILL"), Math.floor(random() * 6));
        const result = await sending.catch(() => null);
        if (killNow) {
          await tap.tap.exited;
          kills++;
          if (kills % 4 === 0) tornDue = true;
          if (tornDue) {
            // A crash mid-append leaves a partial line: forge one, as a kill inside write() would, about every
            // fourth kill. Only into a file a tap wrote: taps killed within their first milliseconds (on a loaded
            // machine, their first turns) may not have written one yet, so it waits for the next kill then.
            const files = existsSync(`${root}/crashy`) ? readdirSync(`${root}/crashy`).filter((f) => f.endsWith(".jsonl")).sort() : [];
            if (files.length > 0) {
              tornDue = false;
              // The mode, as the tap made it: Deno's appendFileSync sets an existing file's mode to the one given (0666 by default).
              appendFileSync(`${root}/crashy/${files.at(-1)}`, '{"parentUuid":"torn","message":{"role":"us', { mode: 0o600 });
              torn++;
            }
          }
          tap = await start();
        }
        if (result !== null && result.status === 200 && result.content.length > 0) {
          completed.add(String(result.headers.get("request-id")));
          history.push({ role: "assistant", content: result.content });
          break;
        }
      }
      assert.equal(history.at(-1)!.role, "assistant", `turn ${turn} completed within 5 attempts`);
    }
    // One more turn, never killed: an answer whose write a kill cut off is recovered from the next request.
    const last = new Conversation(tap.url, "crashy");
    last.messages.push(...history);
    assert.equal((await last.say("after the last kill")).status, 200);
    tap.tap.signal("SIGTERM");
    assert.equal((await tap.tap.exit()).code, 0);
    const recs = [...readTree(root).entries()].filter(([p]) => p.startsWith("crashy/") && p.split("/").length === 2).flatMap(([, r]) => r);
    assert.deepEqual(users(recs), [...Array.from({ length: 200 }, (_, i) => `turn ${i}`), "after the last kill"], "every turn once, in order");
    const answered = new Set(recs.filter((r) => r.type === "assistant").map((r) => String(r.requestId)));
    const missing = [...completed].filter((id) => !answered.has(id));
    // A kill between the client's last byte and the write's fsync loses the answer's record, not the answer:
    // the next request's history brings it back, reconstructed (docs/DESIGN.md "Writes"). This client sends
    // each turn the moment the last one ends, to a stub that answers at once, so a kill can find several
    // commits still waiting for their writes.
    const rebuilt = recs.filter((r) => r.type === "assistant" && r.reconstructed);
    assert.equal(
      rebuilt.length,
      missing.length,
      `every answer the client saw complete is on disk once, as written or reconstructed; events: ${
        readFileSync(`${root}/session-mirror-events.jsonl`, "utf8").split("\n").filter((l) => !l.includes('"append"')).slice(-10).join(" ")
      }`,
    );
    assert.equal(new Set(recs.map((r) => r.uuid)).size, recs.length, "nothing doubled");
    const tornFiles = readdirSync(`${root}/crashy`).filter((f) => f.endsWith(".torn"));
    assert.ok(kills >= 5, `killed ${kills} times`);
    assert.ok(torn > 0, "a torn tail was forged");
    assert.ok(tornFiles.length > 0, `torn tails were moved aside; the session directory holds ${readdirSync(`${root}/crashy`).join(" ")}`);
    for (const f of tornFiles) assert.match(readFileSync(`${root}/crashy/${f}`, "utf8"), /"parentUuid":"torn"/);
    console.log(
      `kill -9 run: ${kills} kills, ${torn} torn tails forged, ${completed.size} answers completed, ${missing.length} of them reconstructed, ${recs.length} records, 0 lost`,
    );
  });
});
