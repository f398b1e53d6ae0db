/**
 * A writer lock the tap failed to release is still the tap's own: a release that fails (out of file
 * descriptors: EMFILE) is retried, and until it succeeds the tap's next write to that directory reuses the
 * lock instead of waiting for "another writer" that is itself.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import process from "node:process";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { lockFaultsEngineFs } from "../support/faulty-fs.ts";
import { DirLocks, selfOwner } from "../../src/storage/dir-lock.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, readEvents, startTestTap } from "../support/tap.ts";
import { Conversation, textsOf } from "../support/client.ts";
import { pollAsync } from "../support/poll.ts";
import { ROOT, serveTap } from "../support/child.ts";
import { scratchDir } from "../support/recover.ts";

type Health = { status: string; problems: string[] };
const health = async (url: string): Promise<Health> => await (await fetch(`${url}/_tap/health`)).json();
const users = (records: Record<string, unknown>[]) => records.filter((r) => r.type === "user").map((r) => textsOf(r)[0]);

describe("a writer lock whose release failed stays the tap's own", () => {
  let stub: StubUpstream;
  before(async () => {
    stub = await startStub();
  });
  after(async () => await stub.close());

  const lockOf = async (root: string, dir: string) => new DirLocks(nodeFs, root, { self: selfOwner(nodeFs), waitMs: 0, clock: Date.now }).pathFor(dir);

  it("a release that fails once: the answer is written, the lock released by a retry, the session written again", { timeout: 30_000 }, async () => {
    const faults = lockFaultsEngineFs();
    await using tap = await startTestTap(stub.url, { SESSIONTAP_HOLD_BACK_MS: "50" }, { engineSeams: faults.seams });
    const dir = `${tap.root}/sonce`;
    const lock = await lockOf(tap.root, dir);
    const c = new Conversation(tap.url, "sonce");
    await c.say("first");
    await faults.failReads(1); // the release reads the lock to see it is still ours: that read fails
    await c.say("second");
    await tap.engine!.query("mirror.flush", 2000);
    assert.equal(await faults.injected(), 1);
    assert.deepEqual(users(allRecords(dir)), ["first", "second"], "the write itself had succeeded");
    await pollAsync(() => existsSync(lock), (held) => !held, 10_000, "the lock to be released by a retry");
    const events = readEvents(tap.root);
    assert.ok(events.some((e) => e.action === "error" && e.stage === "unlock" && String(e.error).startsWith("EMFILE")), JSON.stringify(events));
    assert.match(tap.stderrLines.find((l) => l.includes("writer lock")) ?? "", /^sessiontap: writer lock of \S+\/sonce could not be released \(EMFILE/);

    await c.say("third");
    await tap.engine!.query("mirror.flush", 2000);
    assert.deepEqual(users(allRecords(dir)), ["first", "second", "third"]);
    assert.equal(readEvents(tap.root).filter((e) => e.action === "error" && String(e.error).startsWith("ELOCKED")).length, 0, "never held by itself");
    assert.equal((await health(tap.url)).status, "ok");
  });

  it("a lock whose removal keeps failing: degraded, and the next write there reuses it; once it can be removed, ok", { timeout: 30_000 }, async () => {
    const faults = lockFaultsEngineFs();
    await using tap = await startTestTap(stub.url, { SESSIONTAP_HOLD_BACK_MS: "50" }, { engineSeams: faults.seams });
    const dir = `${tap.root}/sstuck`;
    const lock = await lockOf(tap.root, dir);
    const c = new Conversation(tap.url, "sstuck");
    await c.say("first");
    await faults.failUnlinks(1_000_000);
    await c.say("second");
    await tap.engine!.query("mirror.flush", 2000);
    assert.ok(existsSync(lock), "left by the failed release");
    assert.equal(JSON.parse(readFileSync(lock, "utf8")).pid, process.pid, "and it names this process");
    const degraded = await health(tap.url);
    assert.equal(degraded.status, "degraded");
    assert.ok(degraded.problems.some((p) => /^mirror: 1 writer lock not released yet \(EMFILE/.test(p)), degraded.problems.join("; "));

    await c.say("third"); // the tap's own lock: reused at once, not waited for
    await tap.engine!.query("mirror.flush", 2000);
    assert.deepEqual(users(allRecords(dir)), ["first", "second", "third"]);
    assert.equal(readEvents(tap.root).filter((e) => e.action === "error" && String(e.error).startsWith("ELOCKED")).length, 0);
    assert.equal(tap.stderrLines.filter((l) => l.includes("could not be released")).length, 1, tap.stderrLines.join("\n"));

    await faults.failUnlinks(0);
    await pollAsync(() => health(tap.url), (h) => h.status === "ok", 15_000, "health to be ok once the lock is released");
    assert.equal(existsSync(lock), false);
    assert.ok(tap.stderrLines.some((l) => /^sessiontap: writer locks released again \(after \d+ failed attempts?\)$/.test(l)), tap.stderrLines.join("\n"));
  });

  it(
    "a real tap under ulimit -n 64, 40 sessions at once: once descriptors are back, every session is written again and no lock is left",
    { timeout: 120_000 },
    async () => {
      const scratch = scratchDir("sessiontap-ulimit-");
      const root = `${scratch.dir}/mirror`;
      // Bun's tap from either test runner: Deno's does not live through this (Deno.serve's accept loop rejects
      // with EMFILE, uncaught, and the process exits 1: denoland/deno#10148), so there is nothing to release.
      const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", root], {
        command: ["sh", "-c", 'ulimit -n 64 && exec "$0" "$@"', `${ROOT}node_modules/.bin/bun`, "run", "src/main.ts"],
        env: { HOME: scratch.dir },
      });
      try {
        // Each request on its own connection, so the tap's descriptors come back once the turns are done.
        const sessions = Array.from({ length: 40 }, (_, i) => new Conversation(url, `sfd${i}`, { headers: { connection: "close" } }));
        for (let round = 0; round < 3; round++) await Promise.all(sessions.map((c) => c.say(`round ${round}`).catch(() => null)));
        const said = () => tap.stderr() + readFileSync(`${root}/session-mirror-events.jsonl`, "utf8");
        assert.match(said(), /EMFILE/, "the tap ran out of descriptors (else this run shows nothing)");
        const locks = () => (existsSync(`${root}/.locks`) ? readdirSync(`${root}/.locks`) : []);
        await pollAsync(
          async () => ({ health: await health(url).catch(() => null), locks: locks() }),
          (s) => s.health?.status === "ok" && s.locks.length === 0,
          60_000,
          "every commit written and no lock left",
        );
        for (const c of sessions) assert.equal((await c.say("after")).status, 200);
        const unwritten = () => sessions.filter((c) => !users(allRecords(`${root}/${c.sessionId}`)).includes("after")).map((c) => c.sessionId);
        await pollAsync(unwritten, (left) => left.length === 0, 30_000, "every session written again");
        for (const c of sessions) {
          const recs = allRecords(`${root}/${c.sessionId}`);
          assert.equal(new Set(recs.map((r) => r.uuid)).size, recs.length, `${c.sessionId}: no record twice`);
        }
        // A record is on disk a moment before its writer lets go of the directory's lock: a lock left is one
        // still there well after that moment.
        await pollAsync(locks, (l) => l.length === 0, 10_000, "no lock left");
      } finally {
        tap.signal("SIGTERM");
        await tap.exit(30_000).catch(() => tap.child.kill("SIGKILL"));
        scratch.cleanup();
      }
    },
  );
});
