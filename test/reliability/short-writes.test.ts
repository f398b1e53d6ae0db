/**
 * A nearly full disk: the kernel writes part of what it is asked and says so only by the count it returns
 * (test/support/short-disk.ts). Every write through the adapter is whole or a failure — loud, retried,
 * never published, never counted, and never leaving a torn tail behind.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { type Full, shortDisk, shortEngineDisk } from "../support/short-disk.ts";
import { startStub, type StubUpstream, textReply } from "../support/stub-upstream.ts";
import { allRecords, readEvents, startTestTap } from "../support/tap.ts";
import { Conversation, textsOf } from "../support/client.ts";
import { pollAsync } from "../support/poll.ts";
import { cli, rec, scratchDir, writeMirror } from "../support/recover.ts";
import { serveTap, spawnTap } from "../support/child.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { writerTag } from "../../src/storage/dir-lock.ts";

type Rec = Record<string, unknown>;
type Health = { status: string; problems: string[] };
const health = async (url: string): Promise<Health> => await (await fetch(`${url}/_tap/health`)).json();
const users = (records: Rec[]) => records.filter((r) => r.type === "user").map((r) => textsOf(r)[0]);
const FULLS: Full[] = ["enospc", "part-then-throw", "zero"];

/** The real adapter, except that exclusive creates of files whose name ends `suffix` keep only 100 bytes and say all went well (a disk that lies). */
function lyingFs(suffix: string): FsAdapter {
  return { ...nodeFs, createExclusive: (path, data, sync) => nodeFs.createExclusive(path, path.endsWith(suffix) ? data.slice(0, 100) : data, sync) };
}

describe("the adapter writes all of it or fails, whatever the kernel takes per write", () => {
  const scratch = scratchDir("sessiontap-short-");
  after(() => scratch.cleanup());
  const data = "0123456789".repeat(100) + "\n";

  it("a disk that takes 7 bytes a write: every write lands whole", async () => {
    const disk = shortDisk();
    disk.dribble("", 7);
    const path = `${scratch.dir}/dribble.jsonl`;
    await disk.fs.append(path, data, true);
    assert.equal(await disk.fs.appendExisting(path, data, false), true);
    assert.equal(await disk.fs.createExclusive(`${path}.new`, data, true), true);
    assert.equal(readFileSync(path, "utf8"), data + data);
    assert.equal(readFileSync(`${path}.new`, "utf8"), data);
    assert.ok(disk.cut() > 300, `the writes were cut into pieces (${disk.cut()} cuts)`);
  });

  for (const full of FULLS) {
    it(`a disk that fills part-way (${full}): append and appendExisting reject and leave the file as it was; createExclusive leaves no file`, async () => {
      const disk = shortDisk();
      const path = `${scratch.dir}/${full}.jsonl`;
      writeFileSync(path, "before\n", { mode: 0o600 });
      disk.fill(path, 100, full);
      await assert.rejects(disk.fs.append(path, data, true), (e: Error & { code?: string }) => {
        assert.match(e.message, /100 of 1001 bytes/);
        assert.equal(e.code, full === "zero" ? "EIO" : "ENOSPC");
        return true;
      });
      assert.equal(readFileSync(path, "utf8"), "before\n", "the part written was cut back off");
      disk.heal();
      disk.fill(path, 100, full);
      await assert.rejects(disk.fs.appendExisting(path, data, true), /100 of 1001 bytes/);
      assert.equal(readFileSync(path, "utf8"), "before\n");
      disk.heal();
      disk.fill(path, 100, full);
      await assert.rejects(disk.fs.createExclusive(`${path}.new`, data, true), /100 of 1001 bytes/);
      assert.equal(existsSync(`${path}.new`), false, "a file created for a write that failed is gone");
      disk.heal();
      await disk.fs.append(path, data, true);
      assert.equal(readFileSync(path, "utf8"), "before\n" + data);
    });
  }
});

describe("a tap on a nearly full disk", () => {
  let stub: StubUpstream;
  before(async () => {
    stub = await startStub();
  });
  after(async () => await stub.close());

  it("a mirror append cut short: loud, not counted, no torn tail; once there is room it lands once, and a restart doubles nothing", async () => {
    const dir = mkdtempSync(`${tmpdir()}/sessiontap-short-`);
    const disk = shortEngineDisk();
    let tap = await startTestTap(stub.url, { SESSIONTAP_HOLD_BACK_MS: "50" }, { engineSeams: disk.seams }, dir);
    try {
      const session = `${tap.root}/sshort`;
      const c = new Conversation(tap.url, "sshort");
      assert.equal((await c.say("first")).status, 200);
      await tap.engine!.query("mirror.flush", 2000);
      const [file] = readdirSync(session).filter((f) => f.endsWith(".jsonl"));
      const before = readFileSync(`${session}/${file}`);

      await disk.fill(`${session}/`, 4096);
      const answer = "x".repeat(21_000);
      stub.enqueue({ kind: "sse", chunks: textReply(answer, { deltas: 8 }) });
      const second = await c.say("second");
      assert.equal(second.status, 200, "the client is unaffected");
      await tap.engine!.query("mirror.flush", 500);
      assert.ok((await disk.cut()) >= 1, "the append was cut short");
      assert.deepEqual(readFileSync(`${session}/${file}`), before, "the part that reached the disk was cut back off");
      const degraded = await health(tap.url);
      assert.equal(degraded.status, "degraded");
      assert.ok(degraded.problems.some((p) => /^mirror: 1 commit waiting to be written \(ENOSPC/.test(p)), degraded.problems.join("; "));
      const said = tap.stderrLines.filter((l) => l.includes("mirror write failed"));
      assert.equal(said.length, 1, tap.stderrLines.join("\n"));
      assert.match(said[0], /^sessiontap: mirror write failed in \S+\/sshort \(ENOSPC: wrote 4096 of \d+ bytes/);
      const events = readEvents(tap.root).filter((e) => e.dir === "sshort");
      assert.equal(events.filter((e) => e.action === "append").length, 1, "only the first turn's append is logged as one");
      assert.ok(events.some((e) => e.action === "error" && /^ENOSPC: wrote 4096 of/.test(String(e.error))), JSON.stringify(events));
      assert.equal((await tap.engine!.query("stats")).appends, 1, "not counted as written");

      await disk.heal(); // the retry (backoff from 0.25 s) writes it
      await pollAsync(() => health(tap.url), (h) => h.status === "ok", 10_000, "health to be ok again");
      const records = allRecords(session);
      assert.deepEqual(users(records), ["first", "second"]);
      const answers = records.filter((r) => r.type === "assistant");
      assert.equal(answers.length, 2);
      assert.equal(textsOf(answers[1])[0], answer, "the answer whole, once");
      assert.equal(readdirSync(session).filter((f) => f.endsWith(".torn")).length, 0, "nothing torn to move aside");

      await tap.stop();
      tap = await startTestTap(stub.url, {}, {}, dir); // the disk has room again
      const again = new Conversation(tap.url, "sshort");
      again.messages.push(...c.messages);
      assert.equal((await again.say("third")).status, 200);
      await tap.engine!.query("mirror.flush", 2000);
      const after = allRecords(session);
      assert.deepEqual(users(after), ["first", "second", "third"]);
      assert.equal(new Set(after.map((r) => r.uuid)).size, after.length, "no record twice");
      assert.equal(after.filter((r) => r.reconstructed).length, 0);
    } finally {
      await tap.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a new session's first file cut short: never published, no staging file left; written whole once there is room", async () => {
    const disk = shortEngineDisk();
    await using tap = await startTestTap(stub.url, { SESSIONTAP_HOLD_BACK_MS: "50" }, { engineSeams: disk.seams });
    await disk.fill("/.staging/", 300, "part-then-throw");
    assert.equal((await new Conversation(tap.url, "sfirst").say("hello")).status, 200);
    await pollAsync(() => disk.cut(), (cuts) => cuts >= 1, 10_000, "the first file's write to be cut short"); // not a flush's wall-clock bound
    await tap.engine!.query("mirror.flush", 5000);
    assert.deepEqual(existsSync(`${tap.root}/sfirst`) ? readdirSync(`${tap.root}/sfirst`) : [], [], "nothing published");
    assert.deepEqual(readdirSync(`${tap.root}/.staging`), [], "no part file left");
    assert.equal((await health(tap.url)).status, "degraded");
    await disk.heal();
    await pollAsync(() => health(tap.url), (h) => h.status === "ok", 10_000, "health to be ok again");
    const records = allRecords(`${tap.root}/sfirst`);
    assert.deepEqual(records.map((r) => r.type), ["user", "assistant"]);
  });

  it("the events log cut short: said, degraded, and no torn line glued to the next", async () => {
    const disk = shortEngineDisk();
    await using tap = await startTestTap(stub.url, {}, { engineSeams: disk.seams });
    await tap.engine!.query("mirror.flush", 500);
    await disk.fill("/session-mirror-events.jsonl", 20, "zero");
    await new Conversation(tap.url, "slog").say("hello");
    await tap.engine!.query("mirror.flush", 2000);
    assert.ok((await disk.cut()) >= 1);
    assert.match(tap.stderrLines.find((l) => l.includes("events log")) ?? "", /^sessiontap: events log \S+ not written \(EIO: wrote 20 of \d+ bytes/);
    assert.equal((await health(tap.url)).status, "degraded");
    await disk.heal();
    await new Conversation(tap.url, "slog2").say("again");
    await tap.engine!.query("mirror.flush", 2000);
    assert.equal((await health(tap.url)).status, "ok");
    const lines = readFileSync(`${tap.root}/session-mirror-events.jsonl`, "utf8").split("\n").filter(Boolean);
    for (const line of lines) JSON.parse(line); // throws on a torn line
    assert.ok(lines.some((l) => l.includes('"slog2"')));
  });

  it(
    "the shutdown spool cut short: not counted as saved there; saved in the next place, and the next start replays it whole",
    { timeout: 60_000 },
    async () => {
      // Two processes: a start adopts only the spool of a writer that is dead.
      const scratch = scratchDir("sessiontap-short-");
      const root = `${scratch.dir}/mirror`;
      mkdirSync(root, { mode: 0o700 });
      const env = { HOME: scratch.dir, TMPDIR: `${scratch.dir}/tmp`, SESSIONTAP_DRAIN_MS: "2000" };
      mkdirSync(env.TMPDIR);
      const runtime = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined" ? ["run"] : ["run", "--allow-all", "--unstable-no-legacy-abort"];
      const first = spawnTap(["--upstream", stub.url, "--mirror-dir", root], {
        command: [process.execPath, ...runtime, "test/support/short-disk-tap.ts"],
        env: {
          ...env,
          // The session's writes find no room at all (so its commits wait), the spool under the root 200 bytes.
          SHORT_DISK: JSON.stringify([{ includes: "/sspool/", room: 0 }, { includes: "/.staging/", room: 0 }, { includes: "/.spool/", room: 200 }]),
        },
      });
      try {
        const url = (await first.waitFor("stdout", /export ANTHROPIC_BASE_URL=(\S+)\n/))[1];
        const c = new Conversation(url, "sspool");
        await c.say("one");
        await c.say("two");
        await first.waitFor("stderr", /mirror write failed/);
        first.signal("SIGTERM");
        assert.equal((await first.exit(30_000)).code, 0, first.stderr());
        const unwritten = JSON.parse(/^unwritten (.*)$/m.exec(first.stderr())?.[1] ?? "null");
        assert.equal(unwritten?.kind, "saved", first.stderr());
        assert.equal(unwritten.commits, 2);
        assert.ok(unwritten.path.startsWith(`${env.TMPDIR}/`), `saved in the temp place, not in the root it could not finish: ${unwritten.path}`);
        for (const name of existsSync(`${root}/.spool/mirror`) ? readdirSync(`${root}/.spool/mirror`) : []) {
          assert.equal(readFileSync(`${root}/.spool/mirror/${name}`, "utf8"), "", `${name} holds no part of a commit`);
        }

        const second = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { env });
        try {
          assert.match(second.tap.stdout(), /^ {2}replayed {3}2 commits an earlier run could not write$/m);
          assert.deepEqual(users(allRecords(`${root}/sspool`)), ["one", "two"]);
          assert.equal(allRecords(`${root}/sspool`).filter((r) => r.type === "assistant").length, 2);
          assert.equal(existsSync(unwritten.path), false, "the replayed spool file is gone");
        } finally {
          second.tap.signal("SIGTERM");
          assert.equal((await second.tap.exit(30_000)).code, 0);
        }
      } finally {
        first.child.kill("SIGKILL");
        scratch.cleanup();
      }
    },
  );
});

describe("restore and verify --repair on a nearly full disk keep the original", () => {
  const scratch = scratchDir("sessiontap-short-");
  const root = `${scratch.dir}/mirror`;
  const claude = `${scratch.dir}/claude`;
  const cwd = `${scratch.dir}/proj`;
  const ID = "dddd4444-0000-4000-8000-000000000004";
  const project = `${claude}/projects/${encodeProjectDir(cwd)}`;
  const env = { sessionId: ID, cwd };
  const records = [
    rec("user", "u1", null, "the question", env),
    rec("assistant", "a1", "u1", [{ type: "text", text: "y".repeat(20_000) }], env),
    rec("user", "u2", "a1", "and then", env),
    rec("assistant", "a2", "u2", [{ type: "text", text: "the answer" }], env),
  ];
  before(() => {
    mkdirSync(root, { mode: 0o700 });
    writeMirror(root, ID, records);
  });
  after(() => scratch.cleanup());
  const run = (args: string[], fs: FsAdapter) =>
    cli([...args, "--mirror-dir", root, "--claude-dir", claude], {}, { fs, cwd: scratch.dir, clock: () => Date.parse("2026-01-05T00:00:00Z") });

  for (const full of FULLS) {
    it(`restore (${full}): exit 1, one line; a new transcript is not created, an existing one is untouched; no temporary file left`, async () => {
      rmSync(project, { recursive: true, force: true });
      const disk = shortDisk();
      disk.fill(`${project}/`, 8192, full);
      const fresh = await run(["restore", ID], disk.fs);
      assert.equal(fresh.code, 1, fresh.stdout);
      assert.match(fresh.stderr, /^sessiontap: cannot write \S+\.jsonl: (ENOSPC|EIO): wrote 8192 of \d+ bytes/);
      assert.equal(fresh.stderr.trimEnd().split("\n").length, 1, fresh.stderr);
      assert.deepEqual(readdirSync(project), [], "no transcript, no temporary file");

      const existing = JSON.stringify({ type: "user", sessionId: ID, uuid: "x", message: { role: "user", content: "kept" } }) + "\n";
      writeFileSync(`${project}/${ID}.jsonl`, existing, { mode: 0o600 });
      disk.heal();
      disk.fill(`${project}/`, 8192, full);
      const forced = await run(["restore", ID, "--force"], disk.fs);
      assert.equal(forced.code, 1, forced.stdout);
      assert.match(forced.stderr, /^sessiontap: cannot write /);
      assert.equal(readFileSync(`${project}/${ID}.jsonl`, "utf8"), existing, "the transcript that was there is untouched");
      assert.deepEqual(readdirSync(project), [`${ID}.jsonl`], "no temporary file, no backup of a file that was not replaced");
    });
  }

  it("restore checks the size of what it wrote before putting it in place, even when the write said it was whole", async () => {
    rmSync(project, { recursive: true, force: true });
    mkdirSync(project, { recursive: true });
    const existing = JSON.stringify({ type: "user", sessionId: ID, uuid: "x", message: { role: "user", content: "kept" } }) + "\n";
    writeFileSync(`${project}/${ID}.jsonl`, existing, { mode: 0o600 });
    const r = await run(["restore", ID, "--force"], lyingFs(".tmp"));
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /^sessiontap: cannot write \S+: \S+\.tmp holds 100 of the \d+ bytes written to it\n$/);
    assert.equal(readFileSync(`${project}/${ID}.jsonl`, "utf8"), existing);
    assert.deepEqual(readdirSync(project), [`${ID}.jsonl`]);
  });

  it("verify --repair cut short: exit 1, one line naming the file; the original kept, nothing left beside it", async () => {
    const path = `${root}/${ID}/${readdirSync(`${root}/${ID}`).find((f) => f.endsWith(".jsonl"))}`;
    const whole = readFileSync(path, "utf8");
    writeFileSync(path, whole + whole.split("\n")[0] + "\n" + '{"torn', { mode: 0o600 }); // a duplicate and a torn tail
    const damaged = readFileSync(path, "utf8");
    const disk = shortDisk();
    disk.fill(".repair-", 8192);
    const r = await cli(["verify", "--repair", "--mirror-dir", root], {}, { fs: disk.fs });
    assert.equal(r.code, 1, r.stdout);
    assert.match(
      r.stdout,
      /^DAMAGED dddd4444\S*\n {10}problem: \S+\.jsonl: a torn final line, 1 duplicated record\(s\); not repaired \(ENOSPC: wrote 8192 of \d+ bytes .*\): the file is as it was$/m,
    );
    assert.equal(readFileSync(path, "utf8"), damaged, "the original is kept as it was");
    assert.deepEqual(readdirSync(`${root}/${ID}`).filter((f) => f.includes(".repair-")), [], "no half-written repair left");
    const lied = await cli(["verify", "--repair", "--mirror-dir", root], {}, { fs: lyingFs(`.repair-${await writerTag(nodeFs)}`) });
    assert.equal(lied.code, 1, lied.stdout);
    assert.match(lied.stdout, /problem: .*; not repaired \(EIO: \S+\.repair-w\d+-\S+ holds 100 of the \d+ bytes written to it\): the file is as it was$/m);
    assert.equal(readFileSync(path, "utf8"), damaged, "a write that said it was whole is checked too");
    assert.deepEqual(readdirSync(`${root}/${ID}`).filter((f) => f.includes(".repair-")), []);
    disk.heal();
    const fixed = await cli(["verify", "--repair", "--mirror-dir", root], {}, { fs: disk.fs });
    assert.equal(fixed.code, 0, fixed.stdout);
    assert.equal(readFileSync(path, "utf8"), whole);
  });
});
