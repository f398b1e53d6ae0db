// The one byte-cursor follower of JSONL files, on real files: whole lines only, each once; a file replaced, cut shorter
// or rewritten before the cursor is read afresh; a line too long is handed on as its head and skipped; a tail window;
// a bound on the bytes one read takes.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { JsonlFollower, type Line } from "../../src/storage/jsonl-follower.ts";

const dir = mkdtempSync(`${tmpdir()}/sessiontap-follower-`);
const text = (l: Line) => `${l.oversized ? "!" : ""}${new TextDecoder().decode(l.bytes)}${l.last ? "$" : ""}`;

/** Reads once, returning what was handed on (and whether the follower said it restarted). */
async function read(f: JsonlFollower, o: { maxBytes?: number; final?: boolean } = {}) {
  const lines: string[] = [];
  const starts: number[] = [];
  const r = await f.read(nodeFs, (l) => lines.push(text(l)), { ...o, onRestart: (at) => starts.push(at) });
  return { lines, starts, r };
}

describe("JsonlFollower", () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("hands on whole lines once, keeps an unfinished one for later (or as the last, when asked)", async () => {
    const path = `${dir}/a.jsonl`;
    writeFileSync(path, "one\ntwo\nthr");
    const f = new JsonlFollower(path);
    const first = await read(f);
    assert.deepEqual([first.lines, first.starts, first.r.kind], [["one", "two"], [0], "read"]);
    assert.deepEqual((await read(f)).lines, [], "nothing new");
    assert.deepEqual((await read(f, { final: true })).lines, ["thr$"], "the unfinished last line, when asked");
    appendFileSync(path, "ee\nfour\n");
    assert.deepEqual((await read(f)).lines, ["three", "four"]);
    assert.equal(f.offset, "one\ntwo\nthree\nfour\n".length);
  });

  it("reads afresh a file replaced, cut shorter, or rewritten before the cursor", async () => {
    const path = `${dir}/b.jsonl`;
    writeFileSync(path, "a\nb\n");
    const f = new JsonlFollower(path);
    await read(f);
    writeFileSync(`${path}.new`, "c\n");
    renameSync(`${path}.new`, path);
    assert.deepEqual(await read(f).then((x) => [x.lines, x.starts]), [["c"], [0]], "another inode");
    writeFileSync(path, "");
    assert.deepEqual((await read(f)).starts, [0], "cut shorter");
    writeFileSync(path, "d\ne\n");
    await read(f);
    writeFileSync(path, "X\nY\nfollows\n");
    assert.deepEqual(await read(f).then((x) => [x.lines, x.starts]), [["X", "Y", "follows"], [0]], "other bytes before the cursor");
    rmSync(path);
    assert.equal((await read(f)).r.kind, "missing");
  });

  it("a line longer than maxLine is handed on as its first bytes, once, then skipped; a tail window starts after a line break", async () => {
    const path = `${dir}/c.jsonl`;
    writeFileSync(path, `short\n${"x".repeat(100)}\nafter\n`);
    const lines = (await read(new JsonlFollower(path, { maxLine: 50 }))).lines;
    assert.deepEqual(lines.map((l) => l.slice(0, 3)), ["sho", "!xx", "aft"]);
    const tail = new JsonlFollower(path, { startAt: (size) => size - 10 });
    assert.deepEqual((await read(tail)).lines, ["after"], "the partial line before the window is skipped");
    const atBreak = new JsonlFollower(path, { startAt: (size) => size - "after\n".length });
    assert.deepEqual((await read(atBreak)).lines, ["after"], "a window that starts on a line's first byte keeps that line");
  });

  it("reads at most maxBytes at a time (and the few bytes before the cursor it checks)", async () => {
    const path = `${dir}/d.jsonl`;
    writeFileSync(path, Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n") + "\n");
    const f = new JsonlFollower(path);
    const seen: string[] = [];
    for (let i = 0; i < 100; i++) {
      const { lines, r } = await read(f, { maxBytes: 64 });
      assert.ok(r.kind === "read" && r.bytes <= 64 + 64, JSON.stringify(r));
      seen.push(...lines);
      if (r.kind === "read" && r.atEnd) break;
    }
    assert.deepEqual(seen, Array.from({ length: 100 }, (_, i) => `line ${i}`));
  });
});
