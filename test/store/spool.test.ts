// The store's queue on disk on its own (no PostgreSQL needed): modes, order, a drain cut short resuming where it
// stopped, appends racing the end of a drain, dead processes' files adopted (a live process's or another host's
// never), and a torn tail reported and skipped.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { processStart, selfOwner } from "../../src/storage/dir-lock.ts";
import { Spool, trustedPlace } from "../../src/storage/spool.ts";
import type { CommitJob } from "../../src/protocol/commit-job.ts";

const job = (n: number) => ({ route: "main", sessionDir: `s${n}`, agentDir: null, n }) as unknown as CommitJob;
const nOf = (j: CommitJob) => (j as unknown as { n: number }).n;

/** Takes every job off the queue through `write` (which throws to stop, leaving that job queued); returns their numbers. */
async function drain(s: Spool, write: (j: CommitJob) => void | Promise<void> = () => {}): Promise<number[]> {
  const seen: number[] = [];
  for (let jobs = await s.next(1, () => ""); jobs.length > 0; jobs = await s.next(1, () => "")) {
    await write(jobs[0]);
    seen.push(nOf(jobs[0]));
    s.shift(1);
  }
  return seen;
}

describe("the outage spool", () => {
  const dir = mkdtempSync(`${tmpdir()}/sessiontap-spool-`);
  const events: string[] = [];
  const spool = (sub: string) =>
    new Spool(nodeFs, trustedPlace(nodeFs, dir, `${dir}/${sub}`), selfOwner(nodeFs), {
      malformed: (file, line) => events.push(`malformed ${file}:${line}`),
      adopted: (file, jobs) => events.push(`adopted ${file} ${jobs}`),
      refused: (error) => events.push(`refused ${error.message}`),
    });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("appends fsynced 0600 lines in a 0700 directory and gives them back in order; a drain cut short resumes at the job it stopped on", async () => {
    const s = spool("a");
    for (let n = 1; n <= 4; n++) await s.append(job(n));
    assert.equal(s.pending, 4);
    assert.equal(statSync(`${dir}/a`).mode & 0o777, 0o700);
    const [file] = readdirSync(`${dir}/a`);
    assert.equal(statSync(`${dir}/a/${file}`).mode & 0o777, 0o600);
    const seen: number[] = [];
    await assert.rejects(drain(s, (j) => {
      if (nOf(j) === 3) throw new Error("the store went away again");
      seen.push(nOf(j));
    }));
    assert.deepEqual(seen, [1, 2]);
    assert.equal(s.pending, 2);
    await s.append(job(5));
    assert.deepEqual([...seen, ...(await drain(s))], [1, 2, 3, 4, 5], "in order, none twice");
    assert.equal(s.pending, 0);
    assert.deepEqual(readdirSync(`${dir}/a`), [], "a queue written to its end leaves no file");
  });

  it("an append racing the end of a drain is given back by it or by the next, never stranded", async () => {
    const s = spool("b");
    await s.append(job(1));
    const late: Promise<void>[] = [];
    const seen = await drain(s, (j) => {
      if (nOf(j) === 1) late.push(s.append(job(2)), s.append(job(3)));
    });
    await Promise.all(late);
    assert.deepEqual([...seen, ...(await drain(s))], [1, 2, 3]);
    await s.append(job(4));
    assert.deepEqual(await drain(s), [4], "after the queue emptied: a new file, given back too");
    assert.equal(s.pending, 0);
  });

  it("a line whose append is still being fsynced is not given back before the append is done: the count of waiting commits ends at 0", async () => {
    // The real adapter, with its fsync held: the line is in the file at once, the append resolves later (a slow disk).
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let wrote = () => {};
    const written = new Promise<void>((resolve) => (wrote = resolve));
    const slowSync = {
      ...nodeFs,
      append: async (path: string, data: string, sync: boolean) => {
        await nodeFs.append(path, data, false);
        wrote();
        if (sync) await held;
      },
    };
    const s = new Spool(slowSync, trustedPlace(slowSync, dir, `${dir}/slow`), selfOwner(nodeFs), { malformed: () => {}, adopted: () => {}, refused: () => {} });
    const appended = s.append(job(1));
    await written;
    const draining = drain(s);
    // Let the drain run as far as it can while the fsync is held, then let the append finish.
    for (let turn = 0; turn < 50; turn++) await new Promise((resolve) => setImmediate(resolve));
    release();
    await appended;
    assert.deepEqual(await draining, [1]);
    assert.equal(s.pending, 0, "nothing is counted as waiting once the queue is empty");
    assert.deepEqual(readdirSync(`${dir}/slow`), []);
  });

  it("adopts the files of dead processes on this host once, reports a torn tail, and leaves a live process's and another host's alone", async () => {
    mkdirSync(`${dir}/c`, { mode: 0o700 });
    const host = hostname().replace(/[^A-Za-z0-9.]/g, "_");
    const dead = spawnSync("sh", ["-c", "exit 0"]).pid;
    const sleeper = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      const start = await processStart(nodeFs, sleeper.pid!);
      const deadFile = `spool-${host}-${dead}-1.jsonl`;
      const recycled = `spool-${host}-1-1.jsonl`; // pid 1, but not its start time: a recycled pid, so a dead owner
      const live = `spool-${host}-${sleeper.pid}-${start ?? "x"}.jsonl`;
      const foreign = `spool-another_host-${dead}-1.jsonl`; // another host's file is never judged
      writeFileSync(`${dir}/c/${deadFile}`, [job(1), job(2)].map((j) => JSON.stringify(j) + "\n").join("") + '{"route":"ma');
      writeFileSync(`${dir}/c/${recycled}`, JSON.stringify(job(3)) + "\n");
      for (const name of [live, foreign]) writeFileSync(`${dir}/c/${name}`, JSON.stringify(job(9)) + "\n");
      const s = spool("c");
      assert.equal(s.pending, 0);
      const seen = await drain(s);
      assert.equal(seen.length, 3);
      assert.deepEqual(seen.slice().sort(), [1, 2, 3]);
      assert.ok(seen.indexOf(1) < seen.indexOf(2), "a file's jobs in order");
      assert.ok(events.includes(`adopted ${deadFile} 2`), events.join("; "));
      assert.ok(events.includes(`adopted ${recycled} 1`), events.join("; "));
      assert.ok(events.some((e) => /^malformed spool-.*-a\d+\.jsonl:\d+$/.test(e)), `the torn tail is reported: ${events.join("; ")}`);
      assert.deepEqual(readdirSync(`${dir}/c`).sort(), [foreign, live].sort(), "dead owners' files adopted and emptied; the others kept");
      assert.equal(s.pending, 0);
    } finally {
      sleeper.kill("SIGKILL");
    }
  });
});
