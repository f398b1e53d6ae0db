import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { sweepTree } from "../../src/storage/sweep.ts";
import { prepareRoot } from "../../src/cli/serve.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, readEvents, startTestTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";

const OLD = (Date.now() - 90 * 86_400_000) / 1000;

/** Writes an old mirror file. */
function oldFile(path: string, text = "{}\n"): void {
  writeFileSync(path, text);
  utimesSync(path, OLD, OLD);
}

describe("hostile trees", () => {
  let stub: StubUpstream;
  let dir: string;
  let root: string;
  let outside: string;
  beforeEach(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-hostile-`);
    root = `${dir}/mirror`;
    outside = `${dir}/outside`;
    mkdirSync(root, { recursive: true, mode: 0o700 });
    mkdirSync(outside);
    oldFile(`${outside}/victim.jsonl`);
  });
  afterEach(async () => {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a session directory that is a symlink is never written through; other sessions carry on", async () => {
    symlinkSync(outside, `${root}/linked`);
    mkdirSync(`${root}/agented/subagents`, { recursive: true });
    symlinkSync(outside, `${root}/agented/subagents/agent-x`);
    await using tap = await startTestTap(stub.url, {}, {}, dir);
    assert.equal((await new Conversation(tap, "linked").say("hello")).status, 200);
    assert.equal((await new Conversation(tap, "agented", { headers: { "x-claude-code-agent-id": "x" } }).say("hi")).status, 200);
    assert.equal((await new Conversation(tap, "fine").say("hello")).status, 200);
    await tap.close();
    assert.deepEqual(readdirSync(outside), ["victim.jsonl"], "nothing was written outside the root");
    assert.equal(allRecords(`${root}/fine`).length, 2);
    const unsafe = readEvents(root).filter((e) => e.action === "error" && String(e.error).startsWith("EUNSAFE"));
    assert.ok(unsafe.length >= 2, "each refusal is an events-log line");
  });

  it("records of another session found in a directory stop writes there before anything is written", async () => {
    await using tap = await startTestTap(stub.url, {}, {}, dir);
    await new Conversation(tap, "owner-a").say("a's words");
    await new Conversation(tap, "owner-b").say("b's words");
    await tap.close();
    const [bFile] = readdirSync(`${root}/owner-b`);
    const [aFile] = readdirSync(`${root}/owner-a`);
    writeFileSync(`${root}/owner-b/${aFile}`, readFileSync(`${root}/owner-a/${aFile}`)); // a's file misplaced into b
    const before = readFileSync(`${root}/owner-b/${bFile}`, "utf8");
    await using again = await startTestTap(stub.url, {}, {}, dir);
    const b = new Conversation(again, "owner-b");
    assert.equal((await b.say("b continues")).status, 200, "the client is unaffected");
    assert.equal((await new Conversation(again, "owner-c").say("c starts")).status, 200);
    await again.close();
    assert.equal(readFileSync(`${root}/owner-b/${bFile}`, "utf8"), before, "nothing was added to b");
    assert.ok(readEvents(root).some((e) => e.action === "error" && String(e.error).startsWith("EIDENTITY") && String(e.dir) === "owner-b"));
    assert.equal(allRecords(`${root}/owner-c`).length, 2, "other sessions carry on");
  });

  it("the root must be a readable, writable directory (created and probed at start)", async () => {
    writeFileSync(`${dir}/a-file`, "x");
    assert.match(String(await prepareRoot(nodeFs, `${dir}/a-file`)), /not a directory/);
    assert.match(String(await prepareRoot(nodeFs, `${dir}/a-file/mirror`)), /cannot be created \(ENOTDIR/);
    symlinkSync(root, `${dir}/root-link`);
    assert.match(String(await prepareRoot(nodeFs, `${dir}/root-link`)), /symbolic link/);
    const unwritable: FsAdapter = { ...nodeFs, canReadWrite: async () => false };
    assert.match(String(await prepareRoot(unwritable, root)), /not readable and writable/);
    const refusing: FsAdapter = {
      ...nodeFs,
      createExclusive: async () => {
        throw Object.assign(new Error("read-only file system"), { code: "EROFS" });
      },
    };
    assert.match(String(await prepareRoot(refusing, root)), /nothing can be written there \(EROFS/);
    assert.equal(await prepareRoot(nodeFs, `${dir}/absent/deeper`), null, "an absent root is created at start");
    assert.equal(statSync(`${dir}/absent/deeper`).mode & 0o777, 0o700);
    assert.equal(await prepareRoot(nodeFs, root), null);
    assert.deepEqual(readdirSync(root).filter((n) => n.startsWith(".sessiontap-probe")), [], "the probe is removed");
  });

  /** A sweep whose adapter swaps `victimDir` for a symlink to `outside` when `when` matches a call. */
  async function sweepWithSwap(when: (op: string, path: string) => boolean): Promise<number> {
    mkdirSync(`${root}/s1`);
    oldFile(`${root}/s1/old.jsonl`);
    let swapped = 0;
    const swapFirst = <A extends unknown[], R>(op: string, real: (...a: A) => Promise<R>) => async (...args: A): Promise<R> => {
      if (swapped === 0 && when(op, String(args[0]))) {
        renameSync(`${root}/s1`, `${dir}/s1-moved`);
        symlinkSync(outside, `${root}/s1`);
        swapped++;
      }
      return real(...args);
    };
    const fs: FsAdapter = { ...nodeFs, readdir: swapFirst("readdir", nodeFs.readdir), lstat: swapFirst("lstat", nodeFs.lstat) };
    await sweepTree(fs, root, Date.now() - 30 * 86_400_000);
    return swapped;
  }

  it("a directory swapped for a symlink when the sweep lists it: the target is untouched", async () => {
    assert.equal(await sweepWithSwap((op, path) => op === "readdir" && path === `${root}/s1`), 1);
    assert.ok(existsSync(`${outside}/victim.jsonl`));
    assert.ok(existsSync(`${dir}/s1-moved/old.jsonl`), "the moved directory was not touched either");
  });

  it("a directory swapped for a symlink right before the entry is checked: the target is untouched", async () => {
    let seen = 0;
    const swaps = await sweepWithSwap((op, path) => op === "lstat" && path === `${root}/s1/old.jsonl` && ++seen === 2);
    assert.equal(swaps, 1);
    assert.ok(existsSync(`${outside}/victim.jsonl`));
  });

  it("a directory swapped for a symlink right before the directory is re-checked: the target is untouched", async () => {
    let seen = 0;
    const swaps = await sweepWithSwap((op, path) => op === "lstat" && path === `${root}/s1` && ++seen === 2);
    assert.equal(swaps, 1);
    assert.ok(existsSync(`${outside}/victim.jsonl`));
    assert.ok(existsSync(`${dir}/s1-moved/old.jsonl`), "the listing of a directory that changed is not acted on");
  });

  it("an unswapped tree is swept as usual (the swap tests are not passing by doing nothing)", async () => {
    mkdirSync(`${root}/s1`);
    oldFile(`${root}/s1/old.jsonl`);
    const result = await sweepTree(nodeFs, root, Date.now() - 30 * 86_400_000);
    assert.equal(result.removedFiles, 1);
    assert.equal(existsSync(`${root}/s1`), false);
  });
});
