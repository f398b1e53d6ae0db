// A retention sweep running while a writer publishes a file (docs/DESIGN.md "The mirror"): CI once saw a new
// session's first commit fail because the sweep pruned the empty directory made for it. Each test runs a
// real sweep at the moment the writer links its file into place.
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { type SweepResult, sweepTree } from "../../src/storage/sweep.ts";
import { type Cursor, MirrorTree } from "../../src/storage/mirror-tree.ts";

const CUTOFF = () => Date.now() - 30 * 86_400_000;
const OLD = (Date.now() - 90 * 86_400_000) / 1000;

describe("the retention sweep and a writer at the same moment", () => {
  let dir: string;
  let root: string;
  beforeEach(() => {
    dir = mkdtempSync(`${tmpdir()}/sessiontap-sweep-race-`);
    root = `${dir}/mirror`;
    mkdirSync(root, { mode: 0o700 });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A tree whose adapter runs one real sweep right before its first link or append; returns what the sweep did. */
  function treeSweepingAt(op: "link" | "append", maxBytes: number): { tree: MirrorTree; swept: () => SweepResult | null } {
    let swept: SweepResult | null = null;
    const sweepFirst = async () => {
      if (swept === null) swept = await sweepTree(nodeFs, root, CUTOFF());
    };
    const fs: FsAdapter = op === "link" ? { ...nodeFs, link: async (existing, path) => (await sweepFirst(), nodeFs.link(existing, path)) } : {
      ...nodeFs,
      append: async (path, data, sync) => (await sweepFirst(), nodeFs.append(path, data, sync)),
      appendExisting: async (path, data, sync) => (await sweepFirst(), nodeFs.appendExisting(path, data, sync)),
    };
    return { tree: new MirrorTree(fs, root, maxBytes, () => Date.now(), false), swept: () => swept };
  }

  /** A session directory holding one mirror file older than the cutoff, and the cursor a catch-up left. */
  function idleSession(name: string): { session: string; cursor: Cursor } {
    const session = `${root}/${name}`;
    mkdirSync(session, { mode: 0o700 });
    writeFileSync(`${session}/2020-01-01T00-00-00.000Z.jsonl`, '{"old":true}\n', { mode: 0o600 });
    utimesSync(`${session}/2020-01-01T00-00-00.000Z.jsonl`, OLD, OLD);
    return { session, cursor: new Map([["2020-01-01T00-00-00.000Z.jsonl", 13]]) };
  }

  it("a new session's directory, still empty, is left to its writer, and the first file lands in it", async () => {
    const { tree, swept } = treeSweepingAt("link", 1 << 20);
    const session = `${root}/new-session`;
    await tree.ensureDir(session);
    const cursor: Cursor = new Map();
    const result = await tree.append(session, '{"n":1}\n', cursor);
    assert.equal(swept()?.prunedDirs, 0, "the sweep did not prune the young empty directory");
    assert.equal(result.created, true);
    assert.deepEqual(readdirSync(session).map((n) => readFileSync(`${session}/${n}`, "utf8")), ['{"n":1}\n']);
  });

  it("a session whose old files the sweep removes as the writer rotates: the directory is made again and the file lands", async () => {
    const { tree, swept } = treeSweepingAt("link", 16);
    const { session, cursor } = idleSession("old-session");
    const result = await tree.append(session, '{"new":true}\n', cursor);
    assert.deepEqual(
      [swept()?.removedFiles, swept()?.prunedDirs],
      [1, 1],
      "the sweep removed the old file and pruned the directory it emptied (the race happened)",
    );
    assert.equal(result.created, true);
    assert.deepEqual(readdirSync(session).map((n) => readFileSync(`${session}/${n}`, "utf8")), ['{"new":true}\n']);
  });

  it("an idle session's old file swept as the writer appends to it: the records go into a new file, the directory made again", async () => {
    const { tree, swept } = treeSweepingAt("append", 1 << 20);
    const { session, cursor } = idleSession("idle-session");
    const result = await tree.append(session, '{"new":true}\n', cursor);
    assert.deepEqual([swept()?.removedFiles, swept()?.prunedDirs], [1, 1], "the race happened");
    assert.equal(result.created, true);
    assert.deepEqual(readdirSync(session).map((n) => readFileSync(`${session}/${n}`, "utf8")), ['{"new":true}\n']);
    assert.deepEqual([...cursor.entries()], [[result.path.slice(session.length + 1), 13]], "the cursor names only the new file");
  });

  it("the same while the directory stays (it holds a side conversation): no file is made afresh under the swept name", async () => {
    const { tree, swept } = treeSweepingAt("append", 1 << 20);
    const { session, cursor } = idleSession("busy-session");
    mkdirSync(`${session}/side`, { mode: 0o700 });
    writeFileSync(`${session}/side/2026-01-01T00-00-00.000Z.jsonl`, '{"side":true}\n', { mode: 0o600 });
    const result = await tree.append(session, '{"new":true}\n', cursor);
    assert.deepEqual([swept()?.removedFiles, swept()?.prunedDirs], [1, 0], "the race happened");
    assert.equal(existsSync(`${session}/2020-01-01T00-00-00.000Z.jsonl`), false);
    assert.equal(readFileSync(result.path, "utf8"), '{"new":true}\n');
    assert.deepEqual([...cursor.keys()], [result.path.slice(session.length + 1)]);
  });

  it("an empty directory older than the cutoff is still pruned, and a young one kept", async () => {
    mkdirSync(`${root}/abandoned`, { mode: 0o700 });
    utimesSync(`${root}/abandoned`, OLD, OLD);
    mkdirSync(`${root}/young`, { mode: 0o700 });
    const result = await sweepTree(nodeFs, root, CUTOFF());
    assert.equal(result.prunedDirs, 1);
    assert.equal(existsSync(`${root}/abandoned`), false);
    assert.equal(existsSync(`${root}/young`), true);
  });
});
