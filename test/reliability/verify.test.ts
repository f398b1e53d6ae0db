import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { main } from "../../src/cli/main.ts";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { startTestTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";

/** Runs `sessiontap verify …` in this process (on `fs`, default the real one); returns exit code and output. */
async function verify(root: string, ...args: (string | FsAdapter)[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const fs = args.find((a): a is FsAdapter => typeof a !== "string") ?? nodeFs;
  const code = await main(["verify", "--mirror-dir", root, ...args.filter((a): a is string => typeof a === "string")], {}, {
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    home: root,
    stopSignal: new Promise(() => {}),
    fs,
  });
  return { code, out, err };
}

describe("sessiontap verify [--repair]", () => {
  let stub: StubUpstream;
  let dir: string;
  let root: string;
  const file = (session: string) => `${root}/${session}/${readdirSync(`${root}/${session}`).filter((f) => f.endsWith(".jsonl"))[0]}`;
  before(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-verify-`);
    root = `${dir}/mirror`;
    await using tap = await startTestTap(stub.url, {}, {}, dir);
    for (const s of ["healthy", "torn", "garbled", "doubled", "broken", "loose", "misplaced"]) {
      const c = new Conversation(tap, s);
      await c.say("one");
      await c.say("two");
    }
  });
  after(async () => {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a healthy tree: every session ok, exit 0", async () => {
    const r = await verify(root);
    assert.equal(r.code, 0, r.out + r.err);
    assert.match(r.out, /7 session\(s\) checked, 0 with problems/);
  });

  it("finds each kind of damage, per session, exit 1", async () => {
    appendFileSync(file("torn"), '{"parentUuid":"x","type":"us');
    const garbled = readFileSync(file("garbled"), "utf8").split("\n");
    garbled.splice(1, 0, "%% not json %%");
    writeFileSync(file("garbled"), garbled.join("\n"));
    const doubled = readFileSync(file("doubled"), "utf8").split("\n");
    appendFileSync(file("doubled"), doubled[0] + "\n");
    const broken = readFileSync(file("broken"), "utf8").split("\n");
    writeFileSync(file("broken"), [broken[0], ...broken.slice(2)].join("\n"));
    chmodSync(file("loose"), 0o644);
    appendFileSync(file("misplaced"), readFileSync(file("healthy"), "utf8").split("\n")[0] + "\n");
    const r = await verify(root);
    assert.equal(r.code, 1);
    const block = (s: string) => r.out.split(/\n(?=\S)/).find((b) => b.includes(` ${s}\n`) || b.endsWith(` ${s}`)) ?? "";
    assert.match(block("healthy"), /^ok/);
    assert.match(block("torn"), /a torn final line/);
    assert.match(block("garbled"), /1 unreadable line/);
    assert.match(block("doubled"), /1 duplicated record/);
    assert.match(block("broken"), /parent is missing/);
    assert.match(block("loose"), /mode 644, not 600/);
    assert.match(block("misplaced"), /misplaced here/);
    assert.match(r.out, /7 session\(s\) checked, 6 with problems/);
  });

  it("--repair fixes what it can without losing a byte, and says what is left", async () => {
    const tornBytes = readFileSync(file("torn"), "utf8");
    const r = await verify(root, "--repair");
    assert.equal(r.code, 1, "a broken chain and a misplaced record cannot be repaired");
    for (const s of ["torn", "garbled", "doubled", "loose"]) assert.match(r.out, new RegExp(`ok\\s+${s}\\n(\\s+repaired: .*\\n)+`), s);
    const torn = readdirSync(`${root}/torn`);
    assert.ok(torn.some((f) => f.endsWith(".jsonl.torn")));
    const moved = readFileSync(`${root}/torn/${torn.find((f) => f.endsWith(".torn"))}`, "utf8");
    assert.equal(readFileSync(file("torn"), "utf8") + moved.replace(/\n$/, ""), tornBytes, "every byte is in the file or beside it");
    assert.ok(readdirSync(`${root}/doubled`).some((f) => f.endsWith(".dup")));
    assert.equal(statSync(file("loose")).mode & 0o777, 0o600);
    const again = await verify(root);
    assert.match(again.out, /7 session\(s\) checked, 2 with problems/);
  });

  it("where files have no POSIX modes (Windows), modes are neither reported nor repaired", async () => {
    chmodSync(file("healthy"), 0o644);
    try {
      const windowsLike: FsAdapter = { ...nodeFs, posixModes: false };
      const r = await verify(root, "--repair", windowsLike);
      assert.doesNotMatch(r.out, /mode 644/);
      assert.equal(statSync(file("healthy")).mode & 0o777, 0o644, "left as it was");
      assert.match((await verify(root)).out, /mode 644, not 600/, "and on POSIX the same file is reported");
    } finally {
      chmodSync(file("healthy"), 0o600);
    }
  });

  it("a missing mirror is exit 1 with one line; an argument is a usage error", async () => {
    const r = await verify(`${dir}/nowhere`);
    assert.equal(r.code, 1);
    assert.match(r.err, /no mirror at/);
    const bad = await main(["verify", "extra", "--mirror-dir", root], {}, {
      stdout: () => {},
      stderr: () => {},
      home: root,
      stopSignal: new Promise(() => {}),
    });
    assert.equal(bad, 2);
  });
});
