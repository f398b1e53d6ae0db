// The guard watches the paths it knows and lists a directory only when it must (docs/GUARD.md "Reading
// without cost"): with 100,000 directories under projects/, an idle tap spent ~55 % of a core (42 % with
// 40 sessions, measured here) on a readdir of them all and an lstat in each, per session whose
// transcript it had not found, every minute. Counted through the real adapter, with a clock the test moves:
// the first search of a session looks everywhere once; the next ones, minute after minute, list nothing
// and stat nothing while projects/ is unchanged; a new project directory is looked in alone, and found.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { Guard } from "../../src/guard/guard.ts";
import { hashMessages } from "../../src/protocol/lineage.ts";
import type { CommitJob } from "../../src/protocol/commit-job.ts";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { pollAsync } from "../support/poll.ts";

const DIRS = 2000;
const SESSIONS = Array.from({ length: 5 }, (_, i) => `0b7c2b53-0000-4000-8000-00000000090${i}`);

/** A main-conversation commit of `session` in `cwd`. */
function job(session: string, cwd: string): CommitJob {
  return {
    route: "main",
    compaction: false,
    sessionDir: session,
    agentDir: null,
    messages: hashMessages([{ role: "user", content: `a prompt of ${session}` }]),
    base: { sessionId: session, cwd, gitBranch: null, entrypoint: "cli", version: "0.1.0", isSidechain: false, agentId: null },
    requestTimestamp: new Date().toISOString(),
    answer: null,
    kind: "complete",
  };
}

describe("the guard with thousands of project directories", { timeout: 60_000 }, () => {
  const scratch = mkdtempSync(`${tmpdir()}/sessiontap-many-projects-`);
  const projects = `${scratch}/claude/projects`;
  for (let i = 0; i < DIRS; i++) mkdirSync(`${projects}/-home-u-proj-${i}`, { recursive: true });
  let guard: Guard | null = null;
  after(() => {
    guard?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("searches every directory once per session, then only new ones, listing projects/ only when it changed", async () => {
    const calls = { readdir: 0, lstatInside: 0 };
    const counting: FsAdapter = {
      ...nodeFs,
      readdir: (path) => {
        if (path === projects) calls.readdir++;
        return nodeFs.readdir(path);
      },
      lstat: (path) => {
        if (path.startsWith(`${projects}/`) && path.split("/").length === projects.split("/").length + 2) calls.lstatInside++;
        return nodeFs.lstat(path);
      },
    };
    let now = Date.now();
    const g = (guard = new Guard({
      fs: counting,
      claudeDir: `${scratch}/claude`,
      clock: () => now,
      stderr: () => {},
      log: () => {},
      settleMs: 10,
      confirmMs: 10,
      sweepMs: 20,
      maxLooksPerMinute: 10_000,
    }));
    for (const id of SESSIONS) g.observe(job(id, `/home/u/work-${id.slice(-1)}`));
    const looked = (n: number) => pollAsync(() => g.health().looks, (l) => l >= n, 10_000, `${n} looks`);
    await looked(SESSIONS.length);
    await pollAsync(() => calls.lstatInside, (n) => n >= SESSIONS.length * (DIRS + 1), 10_000, "the first searches");
    const first = { ...calls };
    assert.ok(
      first.readdir <= 1,
      `projects/ listed ${first.readdir} times for ${SESSIONS.length} first searches (before: once per session, and once more per follower)`,
    );
    assert.equal(first.lstatInside, SESSIONS.length * (DIRS + 1), "each session: its own path, and every other directory once");

    // Three idle minutes: each session looked at and searched again, nothing changed under projects/.
    for (let minute = 1; minute <= 3; minute++) {
      now += 61_000;
      await looked(g.health().looks + SESSIONS.length);
    }
    assert.equal(calls.readdir - first.readdir, 0, "projects/ is not listed again while it is unchanged");
    assert.equal(calls.lstatInside - first.lstatInside, 3 * SESSIONS.length, "only the paths it knows are stat'ed (before: every directory, each minute)");

    // A new project directory holding one session's transcript: listed once, looked in alone, found.
    mkdirSync(`${projects}/-elsewhere`);
    writeFileSync(
      `${projects}/-elsewhere/${SESSIONS[2]}.jsonl`,
      JSON.stringify({ type: "user", message: { role: "user", content: `a prompt of ${SESSIONS[2]}` } }) + "\n",
    );
    const before = { ...calls };
    now += 61_000;
    await pollAsync(() => g.inspect(SESSIONS[2])?.path, (p) => p === `${projects}/-elsewhere/${SESSIONS[2]}.jsonl`, 10_000, "the transcript found elsewhere");
    assert.equal(calls.readdir - before.readdir, 1, "listed once, for every session's search");
    assert.ok(
      calls.lstatInside - before.lstatInside <= 3 * SESSIONS.length,
      `${calls.lstatInside - before.lstatInside} stats: the known paths and the new directory`,
    );
  });
});
