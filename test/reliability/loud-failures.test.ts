// Failures nobody sees are the worst defect a backup can have. Each failure here must be loud: one line on
// stderr (and again at most once a minute, and a line on recovery), a `degraded` health naming the
// problem, a non-zero exit where one applies, and nothing lost: what could not be written at shutdown is
// saved and replayed by the next start.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { loadFixture, startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, startTestTap } from "../support/tap.ts";
import { Conversation, textsOf } from "../support/client.ts";
import { pollAsync } from "../support/poll.ts";
import { serveTap } from "../support/child.ts";
import { cli, scratchDir } from "../support/recover.ts";

type Health = { status: string; problems: string[]; upstream: Record<string, unknown>; mirror: Record<string, unknown> };
const health = async (url: string): Promise<Health> => await (await fetch(`${url}/_tap/health`)).json();
const users = (records: Record<string, unknown>[]) => records.filter((r) => r.type === "user").map((r) => textsOf(r)[0]);
const CHILD_MS = 60_000;

describe("a tap whose writes fail says so, and says when they work again", () => {
  let stub: StubUpstream;
  before(async () => {
    stub = await startStub();
  });
  after(async () => await stub.close());

  it("a file planted where a session's directory belongs: one stderr line, degraded health; repaired: ok, the commits written", async () => {
    await using tap = await startTestTap(stub.url);
    writeFileSync(`${tap.root}/sblocked`, "not a directory");
    const c = new Conversation(tap.url, "sblocked");
    assert.equal((await c.say("first")).status, 200, "the client is unaffected");
    assert.equal((await c.say("second")).status, 200);
    await tap.engine!.query("mirror.flush", 2000);
    const lines = tap.stderrLines.filter((l) => l.includes("mirror write failed"));
    assert.equal(lines.length, 1, `one line, not one per failure: ${tap.stderrLines.join("\n")}`);
    assert.match(
      lines[0],
      new RegExp(
        `^sessiontap: mirror write failed in ${tap.root}/sblocked \\(EUNSAFE: .*not a directory.*\\)\\. The client is unaffected; \\d+ commits? wait in memory and are retried\\. Fix that directory .*sessiontap doctor$`,
      ),
    );
    const degraded = await health(tap.url);
    assert.equal(degraded.status, "degraded");
    assert.ok(degraded.problems.some((p) => /^mirror: \d+ commits? waiting to be written/.test(p)), degraded.problems.join("; "));
    assert.equal((degraded.mirror.writes as { failing: boolean }).failing, true);

    unlinkSync(`${tap.root}/sblocked`); // repaired: the next retry (backoff from 0.25 s) writes both turns
    const ok = await pollAsync(() => health(tap.url), (h) => h.status === "ok", 10_000, "health to be ok again");
    assert.deepEqual(ok.problems, []);
    assert.deepEqual(users(allRecords(`${tap.root}/sblocked`)), ["first", "second"]);
    assert.ok(
      tap.stderrLines.some((l) => /^sessiontap: mirror writes work again in .* every waiting commit is written$/.test(l)),
      tap.stderrLines.join("\n"),
    );
  });

  it("an events log that cannot be written: one line, a problem; once it can, a line and ok", async () => {
    await using tap = await startTestTap(stub.url);
    // A directory where the log belongs (not empty, or the retention sweep would prune it), in place of
    // the file an event logged at start may have made already.
    rmSync(`${tap.root}/session-mirror-events.jsonl`, { force: true });
    mkdirSync(`${tap.root}/session-mirror-events.jsonl`);
    writeFileSync(`${tap.root}/session-mirror-events.jsonl/keep`, "x");
    await new Conversation(tap.url, "sevents").say("hello");
    await tap.engine!.query("mirror.flush", 2000);
    assert.equal(tap.stderrLines.filter((l) => l.includes("events log")).length, 1, tap.stderrLines.join("\n"));
    assert.match(
      tap.stderrLines.find((l) => l.includes("events log"))!,
      // Refused by the log's own check when it first looks, or by the open itself when an event logged at
      // start had looked just before the directory appeared: either way one line naming why.
      /^sessiontap: events log \S+ not written \((EUNSAFE: .*is not a regular file.*|EISDIR: illegal operation on a directory.*)\); the mirror itself carries on$/,
    );
    const h = await health(tap.url);
    assert.equal(h.status, "degraded");
    assert.ok(h.problems.some((p) => p.startsWith("mirror: the events log is not being written")), h.problems.join("; "));
    assert.deepEqual(users(allRecords(`${tap.root}/sevents`)), ["hello"], "the mirror itself carried on");
    rmSync(`${tap.root}/session-mirror-events.jsonl`, { recursive: true });
    await new Conversation(tap.url, "sevents2").say("again");
    await tap.engine!.query("mirror.flush", 2000);
    assert.equal((await health(tap.url)).status, "ok");
    assert.ok(tap.stderrLines.some((l) => /events log .* written again/.test(l)));
  });

  it("a queue that overflowed: the dropped commits stay a problem (their answers are not in the mirror)", async () => {
    await using tap = await startTestTap(stub.url, { SESSIONTAP_MAX_QUEUED: "1" });
    writeFileSync(`${tap.root}/sfull`, "x");
    const c = new Conversation(tap.url, "sfull");
    for (const text of ["a", "b", "c"]) await c.say(text);
    await tap.engine!.query("mirror.flush", 2000);
    const h = await health(tap.url);
    assert.equal(h.status, "degraded");
    assert.ok(h.problems.some((p) => /^mirror: \d+ commits? dropped since start/.test(p)), h.problems.join("; "));
  });
});

describe("an engine that stalls or dies is loud, and the relay goes on", () => {
  // The real worker, failing on cue (test/support/engine-fault-worker.ts): the only stand-in is the fault.
  const workerUrl = new URL("../support/engine-fault-worker.ts", import.meta.url);
  let stub: StubUpstream;
  before(async () => {
    stub = await startStub();
  });
  after(async () => await stub.close());

  it("a stuck engine: health still answers, degraded, saying the engine did not answer; once it does, ok", async () => {
    await using tap = await startTestTap(stub.url, {}, { workerUrl });
    assert.equal((await health(tap.url)).status, "ok");
    writeFileSync(`${tap.root}/../engine-cue.json`, JSON.stringify({ stallMs: 4000 }));
    // Answered while the engine's thread is still blocked: had it waited, this problem could not be listed.
    const stuck = await health(tap.url);
    assert.equal(stuck.status, "degraded");
    assert.deepEqual(stuck.problems, ["mirror: the mirror engine did not answer within 2000 ms"]);
    const c = new Conversation(tap.url, "sstall");
    assert.equal((await c.say("while it was stuck")).status, 200, "the client is unaffected");
    const ok = await pollAsync(() => health(tap.url), (h) => h.status === "ok", 10_000, "health to be ok once the engine answers");
    assert.deepEqual(ok.problems, []);
    await tap.engine!.query("mirror.flush", 2000);
    assert.deepEqual(users(allRecords(`${tap.root}/sstall`)), ["while it was stuck"]);
  });

  it("an engine whose Worker dies: one stderr line and degraded health while it is down, every byte still relayed; a new engine starts by itself and mirrors the next turns", async () => {
    await using tap = await startTestTap(stub.url, {}, { workerUrl });
    const c = new Conversation(tap, "sdies");
    await c.say("before");
    writeFileSync(`${tap.root}/../engine-cue.json`, JSON.stringify({ crash: true }));
    const first = await health(tap.url);
    assert.equal(first.status, "degraded");
    assert.deepEqual(first.problems.length, 1, first.problems.join("; "));
    assert.match(first.problems[0], /^mirror: the mirror engine stopped \(.*cued by the test.*\); nothing is mirrored until it runs again$/);
    const answer = loadFixture("ts_basic_response");
    stub.enqueue({ kind: "sse", chunks: [answer.slice(0, 700), answer.slice(700)] });
    const relayed = await new Conversation(tap.url, "sdies-relayed").say("while it is restarted");
    assert.equal(relayed.status, 200);
    assert.deepEqual(relayed.raw, new TextEncoder().encode(answer), "the client's bytes are the upstream's");
    const back = await pollAsync(() => health(tap.url), (h) => h.status === "ok", 10_000, "a new engine to answer");
    assert.equal((back as unknown as { engineRestarts: number }).engineRestarts, 1);
    assert.equal((await c.say("after")).status, 200);
    assert.deepEqual(users(allRecords(`${tap.root}/sdies`)), ["before", "after"], "the new engine mirrors the session on");
    const said = tap.stderrLines.filter((l) => /mirror engine (stopped|started again)/.test(l));
    assert.equal(said.length, 2, tap.stderrLines.join("\n"));
    assert.match(said[0], /^sessiontap: mirror engine stopped: .*cued by the test.*; the tap keeps relaying and starts the engine again/);
    assert.match(said[1], /^sessiontap: mirror engine started again; mirroring resumes \(1 restart so far\)$/);
  });
});

describe("a dead upstream is loud: health, doctor and stderr say so; recovery too", () => {
  it("every attempt 502s; health degraded with the upstream's state; doctor fails it; back up: ok and a line", { timeout: CHILD_MS }, async () => {
    // A port held while the tap starts (so the tap cannot be given it), then let go: nothing listens there.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", () => resolve()));
    const port = (holder.address() as { port: number }).port;
    await using tap = await startTestTap(`http://127.0.0.1:${port}`);
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    const scratch = scratchDir();
    try {
      const c = new Conversation(tap.url, "sdead");
      for (let i = 0; i < 3; i++) assert.equal((await c.say(`try ${i}`, { keepOnFailure: false })).status, 502);
      const h = await health(tap.url);
      assert.equal(h.status, "degraded");
      assert.match(
        h.problems.find((p) => p.startsWith("upstream:")) ?? "",
        new RegExp(`^upstream: 127\\.0\\.0\\.1:${port} failing since \\S+ \\(3 attempts; `),
      );
      assert.equal(h.upstream.consecutiveFailures, 3);
      assert.equal(h.upstream.lastSuccess, null);
      assert.equal(h.upstream.url, `http://127.0.0.1:${port}`);
      const said = tap.stderrLines.filter((l) => l.includes("upstream"));
      assert.equal(said.length, 1, said.join("\n"));
      assert.match(
        said[0],
        new RegExp(`^sessiontap: upstream 127\\.0\\.0\\.1:${port} cannot be reached \\((?!(\\w+): \\1)`),
        "named once, its error not repeated",
      );

      mkdirSync(`${scratch.dir}/claude`);
      const doctor = await cli(["doctor", "--mirror-dir", tap.root, "--claude-dir", `${scratch.dir}/claude`], { ANTHROPIC_BASE_URL: tap.url }, {
        cwd: scratch.dir,
      });
      assert.equal(doctor.code, 1, doctor.stdout);
      assert.match(doctor.stdout, new RegExp(`^FAIL +tap upstream +127\\.0\\.0\\.1:${port} failing since`, "m"));

      await using _upstream = await startStub(port); // the upstream answers again, on the same port
      assert.equal((await c.say("now it answers")).status, 200);
      const ok = await health(tap.url);
      assert.equal(ok.status, "ok", ok.problems.join("; "));
      assert.equal(ok.upstream.consecutiveFailures, 0);
      assert.ok(
        tap.stderrLines.some((l) => l === `sessiontap: upstream 127.0.0.1:${port} answers again (after 3 failed attempts)`),
        tap.stderrLines.join("\n"),
      );
    } finally {
      scratch.cleanup();
    }
  });
});

describe("doctor checks the tap Claude Code would use", () => {
  let stub: StubUpstream;
  before(async () => {
    stub = await startStub();
  });
  after(async () => await stub.close());

  it("a tap on a non-default port, found through ANTHROPIC_BASE_URL, named by --port or --url", async () => {
    await using tap = await startTestTap(stub.url);
    const scratch = scratchDir();
    try {
      mkdirSync(`${scratch.dir}/claude`);
      writeFileSync(`${scratch.dir}/claude/settings.json`, JSON.stringify({ cleanupPeriodDays: 365 }));
      const run = (args: string[], env: Record<string, string> = {}) =>
        cli(["doctor", "--mirror-dir", tap.root, "--claude-dir", `${scratch.dir}/claude`, ...args], env, { cwd: scratch.dir });
      const viaEnv = await run([], { ANTHROPIC_BASE_URL: tap.url });
      assert.equal(viaEnv.code, 0, viaEnv.stdout);
      assert.match(viaEnv.stdout, new RegExp(`^ok +tap +${tap.url} \\(ANTHROPIC_BASE_URL in the environment\\) is up`, "m"));
      const viaPort = await run(["--port", String(tap.port)], { ANTHROPIC_BASE_URL: tap.url });
      assert.match(viaPort.stdout, new RegExp(`^ok +tap +http://127\\.0\\.0\\.1:${tap.port} \\(--port\\) is up`, "m"));
      const viaUrl = await run(["--url", `${tap.url}/`], { ANTHROPIC_BASE_URL: tap.url });
      assert.match(viaUrl.stdout, new RegExp(`^ok +tap +${tap.url} \\(--url\\) is up`, "m"));
      const nothing = await run(["--port", "1"], { ANTHROPIC_BASE_URL: tap.url });
      assert.equal(nothing.code, 1);
      assert.match(nothing.stdout, /^FAIL +tap +nothing answers at http:\/\/127\.0\.0\.1:1 /m);
    } finally {
      scratch.cleanup();
    }
  });
});

describe("commits that could not be written are saved at shutdown and replayed by the next start", () => {
  const scratch = scratchDir("sessiontap-spool-");
  let stub: StubUpstream;
  before(async () => {
    stub = await startStub();
  });
  after(async () => {
    await stub.close();
    scratch.cleanup();
  });
  /** Moves the root aside and puts a file where it was (the running tap may re-create the directory meanwhile). */
  const spoilRoot = (root: string) => {
    renameSync(root, `${root}.moved`);
    writeFileSync(`${root}.file`, "the root is now a file");
    for (let attempt = 0;; attempt++) {
      try {
        renameSync(`${root}.file`, root);
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== "EISDIR" || attempt > 20) throw error;
        rmSync(root, { recursive: true, force: true }); // an empty root the tap just made again
      }
    }
  };
  const env = (extra: Record<string, string> = {}) => ({ HOME: scratch.dir, TMPDIR: `${scratch.dir}/tmp`, SESSIONTAP_DRAIN_MS: "2000", ...extra });

  it(
    "SIGTERM with queued commits: saved under the root, said on stderr, exit 0; the next start replays them, nothing lost",
    { timeout: CHILD_MS },
    async () => {
      const root = `${scratch.dir}/m1`;
      mkdirSync(root, { mode: 0o700 });
      writeFileSync(`${root}/squeued`, "in the way");
      const first = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { env: env() });
      const c = new Conversation(first.url, "squeued");
      await c.say("one");
      await c.say("two");
      await first.tap.waitFor("stderr", /mirror write failed/);
      first.tap.signal("SIGTERM");
      assert.equal((await first.tap.exit(CHILD_MS)).code, 0, first.tap.stderr());
      const saved =
        /^sessiontap: (\d+) commits? could not be written to \S+; saved in (\S+\/\.spool\/mirror\/spool-\S+\.jsonl): the next start on this mirror root writes them$/m
          .exec(first.tap.stderr());
      assert.ok(saved !== null, first.tap.stderr());
      assert.equal(Number(saved[1]), 2);
      assert.ok(existsSync(saved[2]));

      unlinkSync(`${root}/squeued`);
      const second = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { env: env() });
      try {
        assert.match(second.tap.stdout(), /^ {2}replayed {3}2 commits an earlier run could not write$/m);
        assert.deepEqual(users(allRecords(`${root}/squeued`)), ["one", "two"]);
        assert.equal(allRecords(`${root}/squeued`).filter((r) => r.type === "assistant").length, 2);
        assert.equal(existsSync(saved[2]), false, "the replayed spool file is gone");
        assert.equal((await health(second.url)).status, "ok");
      } finally {
        second.tap.signal("SIGTERM");
        assert.equal((await second.tap.exit(CHILD_MS)).code, 0);
      }
    },
  );

  it("the root itself gone bad: saved under the temp directory instead, and replayed once the root is back", { timeout: CHILD_MS }, async () => {
    const root = `${scratch.dir}/m2`;
    mkdirSync(`${scratch.dir}/tmp`, { recursive: true });
    const first = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { env: env() });
    spoilRoot(root);
    await new Conversation(first.url, "sroot").say("kept anyway");
    await first.tap.waitFor("stderr", /mirror write failed/);
    first.tap.signal("SIGTERM");
    assert.equal((await first.tap.exit(CHILD_MS)).code, 0, first.tap.stderr());
    const saved = new RegExp(`saved in (${scratch.dir}/tmp/sessiontap-\\w+/spool-[0-9a-f]{16}/spool-\\S+\\.jsonl)`).exec(first.tap.stderr());
    assert.ok(saved !== null, first.tap.stderr());

    unlinkSync(root);
    renameSync(`${root}.moved`, root);
    const second = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { env: env() });
    try {
      assert.match(second.tap.stdout(), /replayed {3}1 commit an earlier run could not write/);
      assert.deepEqual(users(allRecords(`${root}/sroot`)), ["kept anyway"]);
      assert.equal(existsSync(saved[1]), false);
    } finally {
      second.tap.signal("SIGTERM");
      assert.equal((await second.tap.exit(CHILD_MS)).code, 0);
    }
  });

  it("nowhere to save them: one line saying they are lost, exit 1", { timeout: CHILD_MS }, async () => {
    const root = `${scratch.dir}/m3`;
    writeFileSync(`${scratch.dir}/tmp-file`, "a file where the temp directory should be");
    const first = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { env: env({ TMPDIR: `${scratch.dir}/tmp-file` }) });
    spoilRoot(root);
    await new Conversation(first.url, "slost").say("cannot be kept");
    await first.tap.waitFor("stderr", /mirror write failed/);
    first.tap.signal("SIGTERM");
    assert.equal((await first.tap.exit(CHILD_MS)).code, 1, first.tap.stderr());
    assert.match(first.tap.stderr(), /^sessiontap: 1 commit could not be written and could be saved nowhere \(.+\): those turns are not mirrored$/m);
    assert.deepEqual(readdirSync(`${root}.moved`).filter((n) => n === "slost"), []);
  });

  it("serve refuses a root it cannot write before it listens: exit 2, one line naming the root and its setting", { timeout: CHILD_MS }, async () => {
    writeFileSync(`${scratch.dir}/blocker`, "x");
    const { runTap } = await import("../support/child.ts");
    const r = await runTap(["serve", "--port", "0", "--upstream", stub.url], { env: env({ SESSIONTAP_MIRROR_DIR: `${scratch.dir}/blocker/m` }) });
    assert.equal(r.code, 2);
    assert.equal(r.stdout, "", "no startup block: it never looked healthy");
    assert.match(r.stderr, /^sessiontap: cannot mirror to \S+\/blocker\/m \(set by SESSIONTAP_MIRROR_DIR\): it cannot be created \(ENOTDIR/);
  });
});
