// One odd file in Claude Code's directory breaks or hangs nothing (docs/RELIABILITY.md "Trust
// boundaries"). Where a transcript belongs: a FIFO nobody writes (the API calls hung, both engine pool
// threads blocked, `list` ignored the first SIGTERM), a symlink to /dev/zero (one request drove the tap out
// of memory in 2 s; `list` reached 16.9 GB), a 2 GiB transcript (`list`, `show`, `doctor` failed with
// ENOMEM, the viewer's list was a 500), a symlink out of the tree, a project directory that is a symlink.
// Now each is read as a regular file only, with bounded memory, and costs its own row a warning — never
// the listing. Real FIFOs, symlinks and a sparse file; the commands and the tap as real processes.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { dirName } from "../../src/protocol/session-id.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { runTap, serveTap } from "../support/child.ts";
import { Conversation } from "../support/client.ts";
import { pollAsync } from "../support/poll.ts";
import { rec, scratchDir, writeMirror } from "../support/recover.ts";
import { allRecords } from "../support/tap.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";

const GIB = 1024 * 1024 * 1024;
const NOW = new Date(Date.now() - 60_000).toISOString(); // recent: doctor reads the last 30 days
/** The sessions, each with what stands where its transcript belongs. */
const ODD = {
  fifo: "0dd00001-0000-4000-8000-000000000001",
  zero: "0dd00002-0000-4000-8000-000000000002",
  outside: "0dd00003-0000-4000-8000-000000000003",
  linkedProject: "0dd00004-0000-4000-8000-000000000004",
};
const BIG = "b1600000-0000-4000-8000-000000000005";
const FINE = "f1e00000-0000-4000-8000-000000000006";

describe("odd files in Claude Code's directory", () => {
  const scratch = scratchDir("sessiontap-odd-files-");
  const root = `${scratch.dir}/mirror`;
  const claude = `${scratch.dir}/claude`;
  const cwdOf = (id: string) => `${scratch.dir}/proj-${id.slice(0, 8)}`;
  const transcriptOf = (id: string) => `${claude}/projects/${encodeProjectDir(cwdOf(id))}/${id}.jsonl`;
  /** Claude Code's records of the session's one turn (its answer by the message id the mirror has). */
  const line = (id: string) =>
    JSON.stringify({ type: "user", uuid: `${id}-c1`, sessionId: id, message: { role: "user", content: "a prompt" } }) + "\n" +
    JSON.stringify({ type: "assistant", uuid: `${id}-c2`, sessionId: id, message: { id: `msg_${id}-a1`, role: "assistant", content: [] } }) + "\n";
  const commandEnv = { HOME: scratch.dir, CLAUDE_CONFIG_DIR: claude };
  let stub: StubUpstream;

  before(async () => {
    stub = await startStub();
    mkdirSync(root, { mode: 0o700 });
    for (const id of [...Object.values(ODD), BIG, FINE]) {
      const cwd = cwdOf(id);
      writeMirror(root, dirName(id), [
        rec("user", `${id}-u1`, null, "a prompt", { sessionId: id, cwd, timestamp: NOW }),
        rec("assistant", `${id}-a1`, `${id}-u1`, [{ type: "text", text: "an answer" }], { sessionId: id, cwd, timestamp: NOW }),
      ]);
      if (id !== ODD.linkedProject) mkdirSync(`${claude}/projects/${encodeProjectDir(cwd)}`, { recursive: true });
    }
    const made = spawnSync("mkfifo", [transcriptOf(ODD.fifo)]);
    assert.equal(made.status, 0, `mkfifo: ${made.stderr}`);
    symlinkSync("/dev/zero", transcriptOf(ODD.zero));
    writeFileSync(`${scratch.dir}/elsewhere.jsonl`, line(ODD.outside));
    symlinkSync(`${scratch.dir}/elsewhere.jsonl`, transcriptOf(ODD.outside));
    mkdirSync(`${scratch.dir}/other-project`);
    writeFileSync(`${scratch.dir}/other-project/${ODD.linkedProject}.jsonl`, line(ODD.linkedProject));
    symlinkSync(`${scratch.dir}/other-project`, `${claude}/projects/${encodeProjectDir(cwdOf(ODD.linkedProject))}`);
    // 2 GiB: one real record, then a hole (sparse: no disk used) that reads as NUL bytes with no newline.
    const fd = openSync(transcriptOf(BIG), "w");
    writeSync(fd, line(BIG));
    closeSync(fd);
    spawnSync("truncate", ["-s", String(2 * GIB), transcriptOf(BIG)]);
    writeFileSync(transcriptOf(FINE), line(FINE));
  });
  after(async () => {
    await stub.close();
    scratch.cleanup();
  });

  it("readRange refuses a FIFO at once (it never waits for a writer) and never follows a final symlink", { timeout: 10_000 }, async () => {
    await assert.rejects(nodeFs.readRange(transcriptOf(ODD.fifo), 0, 10), /FIFO; not read/);
    await assert.rejects(nodeFs.readRange(transcriptOf(ODD.zero), 0, 10), (e: { code?: string }) => e.code === "ELOOP");
  });

  it("list --json: every session listed, each odd one missing with a warning, the 2 GiB one intact", { timeout: 60_000 }, async () => {
    const r = await runTap(["list", "--json", "--mirror-dir", root], { env: commandEnv, timeoutMs: 45_000 });
    assert.equal(r.code, 0, r.stderr);
    const rows = new Map((JSON.parse(r.stdout) as Record<string, unknown>[]).map((e) => [e.sessionId, e]));
    assert.equal(rows.size, 6);
    for (const [what, id] of Object.entries(ODD)) {
      assert.equal(rows.get(id)?.claudeTranscript, "missing", what);
      assert.match(String(rows.get(id)?.claudeTranscriptWarning), /symbolic link|FIFO/, what);
    }
    assert.equal(rows.get(BIG)?.claudeTranscript, "intact");
    assert.equal(rows.get(FINE)?.claudeTranscript, "intact");
    assert.equal(rows.get(FINE)?.claudeTranscriptWarning, null);
    const human = await runTap(["list", "--mirror-dir", root], { env: commandEnv, timeoutMs: 45_000 });
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /4 sessions \(CLAUDE unreadable\)/);
  });

  it("show of each answers, the odd ones with their warning and no restore offered", { timeout: 60_000 }, async () => {
    for (const id of [...Object.values(ODD), BIG]) {
      const r = await runTap(["show", id, "--mirror-dir", root], { env: commandEnv, timeoutMs: 30_000 });
      assert.equal(r.code, 0, `${id}: ${r.stderr}`);
      if (id !== BIG) {
        assert.match(r.stdout, /Warning +Claude Code's transcript: /, id);
        assert.doesNotMatch(r.stdout, /sessiontap restore/, id);
      }
    }
  });

  it("doctor reads the 2 GiB transcript with bounded memory and warns of each odd one", { timeout: 120_000 }, async () => {
    const r = await runTap(["doctor", "--json", "--mirror-dir", root, "--url", "http://127.0.0.1:1"], { env: commandEnv, timeoutMs: 100_000 });
    assert.doesNotMatch(r.stderr, /ENOMEM|out of memory|RangeError/i);
    const checks = JSON.parse(r.stdout) as { check: string; status: string; detail: string }[];
    const transcripts = checks.filter((c) => c.check === "transcripts");
    for (const id of Object.values(ODD)) {
      assert.ok(transcripts.some((c) => c.status === "warn" && c.detail.startsWith(id)), `${id}: ${JSON.stringify(transcripts)}`);
    }
    assert.ok(!transcripts.some((c) => c.detail.includes(BIG) && c.status === "fail"), JSON.stringify(transcripts));
  });

  it("a tap: the viewer's list answers, and the mirror goes on writing other sessions", { timeout: 60_000 }, async () => {
    const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { env: { ...commandEnv, SESSIONTAP_GUARD: "on" } });
    try {
      const list = await fetch(`${url}/_tap/api/sessions`, { signal: AbortSignal.timeout(20_000) });
      assert.equal(list.status, 200);
      assert.equal((await list.json()).length, 6);
      for (const id of [...Object.values(ODD), BIG]) {
        const one = await fetch(`${url}/_tap/api/sessions/${id}`, { signal: AbortSignal.timeout(20_000) });
        assert.equal(one.status, 200, id);
        await one.body?.cancel();
      }
      // A turn of the FIFO's session (the guard now watches its path) and one of another session: both written.
      const env = (id: string) => ({ system: `# Environment\n - Primary working directory: ${cwdOf(id)}` });
      assert.equal((await new Conversation(url, ODD.fifo, env(ODD.fifo)).say("a turn")).status, 200);
      assert.equal((await new Conversation(url, "another-session", env(FINE)).say("another turn")).status, 200);
      await pollAsync(() => allRecords(`${root}/another-session`).length, (n) => n === 2, 10_000, "the other session's turn written");
      const health = await (await fetch(`${url}/_tap/health`, { signal: AbortSignal.timeout(5000) })).json() as { problems: string[] };
      assert.ok(!health.problems.some((p) => /did not answer/.test(p)), JSON.stringify(health.problems));
    } finally {
      tap.signal("SIGTERM");
      assert.equal((await tap.exit(15_000)).code, 0, "the first SIGTERM stops it");
    }
  });
});
