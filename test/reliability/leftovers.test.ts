// What a killed process leaves is cleaned up by the next start (docs/RELIABILITY.md "Trust boundaries"):
// 0-byte `.staging/*.part` files of a publish, `.repair-…` files of `verify --repair`, and a restore's 27 MB
// temporary file in Claude Code's project directory after kill -9 stayed for ever. Now each name carries
// its writer, and the next tap start, `verify --repair` and restore remove the ones whose writer is provably
// dead — never a live writer's, a link, another user's file, or a fresh file of unknown writer.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import process from "node:process";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { writerOf, writerTag } from "../../src/storage/dir-lock.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { cli, rec, scratchDir, writeMirror } from "../support/recover.ts";
import { readEvents, startTestTap } from "../support/tap.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";

/** The pid of a process that has ended (its writer tag names a dead writer). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["--version"]);
  assert.equal(child.status, 0);
  return child.pid!;
}

describe("leftovers of killed writers", () => {
  const scratch = scratchDir("sessiontap-leftovers-");
  let stub: StubUpstream;
  let live = "";
  let dead = "";
  const old = (path: string) => utimesSync(path, new Date(Date.now() - 2 * 86_400_000), new Date(Date.now() - 2 * 86_400_000));
  before(async () => {
    stub = await startStub();
    live = await writerTag(nodeFs);
    // This host and a dead pid: the writer's part of the tag after its pid is this host's.
    dead = live.replace(/^w\d+-[^-]+-/, `w${deadPid()}-1-`);
  });
  after(async () => {
    await stub.close();
    scratch.cleanup();
  });

  it("a writer tag names this process, and is read back", () => {
    const w = writerOf(`${live}-0123.part`);
    assert.equal(w?.pid, process.pid);
    assert.equal(writerOf("0b7e0c9e-5c1d-4a43-9d1f-1234567890ab.part"), null, "an old name carries none");
  });

  it("a tap's start removes its dead writers' .staging files, and nothing else", async () => {
    const root = `${scratch.dir}/tap/mirror`;
    const staging = `${root}/.staging`;
    mkdirSync(staging, { recursive: true, mode: 0o700 });
    const plant = (name: string, body = "") => (writeFileSync(`${staging}/${name}`, body, { mode: 0o600 }), `${staging}/${name}`);
    plant(`${dead}-0b7e0c9e-5c1d-4a43-9d1f-000000000001.part`);
    plant(`${dead}-0b7e0c9e-5c1d-4a43-9d1f-000000000002.part`, "a cut publish");
    plant(`${live}-0b7e0c9e-5c1d-4a43-9d1f-000000000003.part`);
    old(plant("0b7e0c9e-5c1d-4a43-9d1f-000000000004.part"));
    plant("0b7e0c9e-5c1d-4a43-9d1f-000000000005.part");
    symlinkSync("/etc/hostname", `${staging}/${dead}-link.part`);
    const foreign = plant(`${dead}-0b7e0c9e-5c1d-4a43-9d1f-000000000006.part`);
    chownSync(foreign, 65534, 65534);
    await using tap = await startTestTap(stub.url, {}, {}, `${scratch.dir}/tap`);
    await tap.settled();
    const left = readdirSync(staging).sort();
    await tap.close();
    assert.deepEqual(
      left,
      [
        "0b7e0c9e-5c1d-4a43-9d1f-000000000005.part",
        `${dead}-0b7e0c9e-5c1d-4a43-9d1f-000000000006.part`,
        `${dead}-link.part`,
        `${live}-0b7e0c9e-5c1d-4a43-9d1f-000000000003.part`,
      ].sort(),
      "the dead writers' and the day-old unnamed one are gone; a live writer's, a fresh unnamed one, a link and another user's stay",
    );
    const cleaned = readEvents(root).filter((e) => e.action === "cleanup");
    assert.deepEqual(cleaned.map((e) => e.removed), [3]);
  });

  it("verify --repair removes a dead repair's leftover file; plain verify only reports it", async () => {
    const root = `${scratch.dir}/verify/mirror`;
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const file = writeMirror(root, "sess-v", [rec("user", "v1", null, "hello", { sessionId: "sess-v" })]);
    const leftover = `${file}.repair-${dead}`;
    writeFileSync(leftover, "half a repair", { mode: 0o600 });
    const mine = `${file}.repair-${live}`;
    writeFileSync(mine, "a repair in flight", { mode: 0o600 });
    const checked = await cli(["verify", "--mirror-dir", root]);
    assert.match(checked.stdout + checked.stderr, /leftover of an interrupted repair/);
    assert.ok(existsSync(leftover), "plain verify changes nothing");
    const repaired = await cli(["verify", "--repair", "--mirror-dir", root]);
    assert.ok(!existsSync(leftover), "the dead repair's file is gone");
    assert.match(repaired.stdout, /removed/);
    assert.ok(existsSync(mine), "a live writer's stays, and is still told");
    assert.equal(repaired.code, 1, repaired.stdout);
    assert.match(repaired.stdout, new RegExp(`repair-${live}`));
  });

  it("restore removes a killed restore's temporary file beside the transcript, and only that", async () => {
    const root = `${scratch.dir}/restore/mirror`;
    const claude = `${scratch.dir}/restore/claude`;
    const cwd = `${scratch.dir}/restore/proj`;
    const id = "1e700000-0000-4000-8000-000000000001";
    mkdirSync(root, { recursive: true, mode: 0o700 });
    writeMirror(root, id, [
      rec("user", "r1", null, "hello", { sessionId: id, cwd }),
      rec("assistant", "r2", "r1", [{ type: "text", text: "hi" }], { sessionId: id, cwd }),
    ]);
    const project = `${claude}/projects/${encodeProjectDir(cwd)}`;
    mkdirSync(project, { recursive: true });
    const killed = `${project}/.${id}.jsonl.sessiontap-${dead}-ab12cd34.tmp`;
    writeFileSync(killed, "x".repeat(27 * 1024 * 1024));
    const older = `${project}/.${id}.jsonl.sessiontap-ab12cd34.tmp`;
    writeFileSync(older, "from before writers were named");
    old(older);
    const other = `${project}/.other.jsonl.sessiontap-${dead}-ab12cd34.tmp`;
    writeFileSync(other, "another file's");
    const r = await cli(["restore", id, "--mirror-dir", root], { CLAUDE_CONFIG_DIR: claude });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readdirSync(project).sort(), [`${id}.jsonl`, ".other.jsonl.sessiontap-" + `${dead}-ab12cd34.tmp`].sort());
  });
});
