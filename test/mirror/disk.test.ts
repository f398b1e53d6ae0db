import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { loadFixture, startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, readEvents, readTree, startTestTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";

describe("session mirror: files on disk", () => {
  let stub: StubUpstream;
  let dir: string;
  beforeEach(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-disk-`);
  });
  afterEach(async () => {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("rotates the active file at SESSIONTAP_MAX_BYTES and logs the rotation", async () => {
    await using tap = await startTestTap(stub.url, { SESSIONTAP_MAX_BYTES: "4096" }, {}, dir);
    const c = new Conversation(tap, "rotating");
    for (let i = 0; i < 8; i++) await c.say(`turn ${i} ${"y".repeat(600)}`);
    await tap.stop();
    const files = [...readTree(`${dir}/mirror`).keys()].filter((k) => k.startsWith("rotating/"));
    assert.ok(files.length >= 2, `rotated into ${files.length} files`);
    for (const f of files.slice(0, -1)) assert.ok(statSync(`${dir}/mirror/${f}`).size <= 4096, `${f} stays under the bound`);
    assert.equal(allRecords(`${dir}/mirror/rotating`).length, 16, "nothing lost or doubled across files");
    assert.ok(readEvents(`${dir}/mirror`).some((e) => e.action === "rotate"));
  });

  it("the retention sweep removes old files, prunes empty directories, and never follows a symlink", async () => {
    const root = `${dir}/mirror`;
    const old = (Date.now() - 40 * 86_400_000) / 1000;
    mkdirSync(`${root}/old-session`, { recursive: true });
    writeFileSync(`${root}/old-session/2020-01-01T00-00-00.000Z.jsonl`, "{}\n");
    utimesSync(`${root}/old-session/2020-01-01T00-00-00.000Z.jsonl`, old, old);
    mkdirSync(`${root}/mixed`, { recursive: true });
    writeFileSync(`${root}/mixed/old.jsonl`, "{}\n");
    utimesSync(`${root}/mixed/old.jsonl`, old, old);
    writeFileSync(`${root}/mixed/new.jsonl`, "{}\n");
    writeFileSync(`${root}/mixed/notes.txt`, "not a mirror file");
    utimesSync(`${root}/mixed/notes.txt`, old, old);
    const outside = `${dir}/outside`;
    mkdirSync(outside);
    writeFileSync(`${outside}/victim.jsonl`, "{}\n");
    utimesSync(`${outside}/victim.jsonl`, old, old);
    symlinkSync(outside, `${root}/linked-dir`);
    symlinkSync(`${outside}/victim.jsonl`, `${root}/mixed/linked.jsonl`);

    await using tap = await startTestTap(stub.url, { SESSIONTAP_RETENTION_DAYS: "30" }, {}, dir);
    await new Conversation(tap, "fresh").say("hello");
    await tap.engine!.query("mirror.sweep");
    await tap.stop();
    assert.equal(existsSync(`${root}/old-session`), false, "old file removed and its directory pruned");
    assert.deepEqual(readdirSync(`${root}/mixed`).sort(), ["linked.jsonl", "new.jsonl", "notes.txt"]);
    assert.ok(existsSync(`${outside}/victim.jsonl`), "the symlink's target is untouched");
    assert.ok(existsSync(`${root}/linked-dir`));
    assert.equal(allRecords(`${root}/fresh`).length, 2);
    assert.ok(readEvents(root).some((e) => e.action === "sweep" && e.removed === 2 && e.pruned === 1));
  });

  it("SESSIONTAP_RETENTION_DAYS=0 turns the sweep off", async () => {
    const root = `${dir}/mirror`;
    mkdirSync(`${root}/kept`, { recursive: true });
    writeFileSync(`${root}/kept/a.jsonl`, "{}\n");
    utimesSync(`${root}/kept/a.jsonl`, 0, 0);
    await using tap = await startTestTap(stub.url, { SESSIONTAP_RETENTION_DAYS: "0" }, {}, dir);
    await new Conversation(tap, "s").say("hello");
    await tap.engine!.query("mirror.sweep");
    await tap.stop();
    assert.ok(existsSync(`${root}/kept/a.jsonl`));
  });

  it("directories are 0700 and files 0600; the events log holds no content and no credentials", async () => {
    await using tap = await startTestTap(stub.url, {}, {}, dir);
    await new Conversation(tap, "private").say("SECRET-PROMPT-TEXT");
    await tap.stop();
    const root = `${dir}/mirror`;
    assert.equal(statSync(root).mode & 0o777, 0o700);
    assert.equal(statSync(`${root}/private`).mode & 0o777, 0o700);
    for (const f of readdirSync(`${root}/private`)) assert.equal(statSync(`${root}/private/${f}`).mode & 0o777, 0o600);
    assert.equal(statSync(`${root}/session-mirror-events.jsonl`).mode & 0o777, 0o600);
    const events = readFileSync(`${root}/session-mirror-events.jsonl`, "utf8");
    assert.ok(!events.includes("SECRET-PROMPT-TEXT") && !events.includes("Done (reply"));
    assert.ok(!events.includes("sk-ant-test-SECRET"));
    for (const f of readTree(root).keys()) assert.ok(!readFileSync(`${root}/${f}`, "utf8").includes("sk-ant-test-SECRET"));
    assert.ok(readEvents(root).some((e) => e.action === "append" && e.records === 2 && typeof e.bytes === "number"));
  });

  it("SESSIONTAP_MIRROR=off: pure passthrough, nothing written at all", async () => {
    await using tap = await startTestTap(stub.url, { SESSIONTAP_MIRROR: "off" }, {}, dir);
    const result = await new Conversation(tap, "off").say("hello");
    await tap.stop();
    assert.equal(result.status, 200);
    assert.equal(existsSync(`${dir}/mirror`), false);
  });

  it("thinking blocks are kept by default and dropped with SESSIONTAP_INCLUDE_THINKING=false", async () => {
    for (const [setting, expectThinking] of [["true", true], ["false", false]] as const) {
      await using tap = await startTestTap(stub.url, { SESSIONTAP_INCLUDE_THINKING: setting }, {}, dir);
      stub.enqueue({ kind: "sse", chunks: [loadFixture("thinking_text")] });
      await new Conversation(tap, `thinking-${setting}`).say("think");
      await tap.stop();
      const assistant = allRecords(`${dir}/mirror/thinking-${setting}`).find((r) => r.type === "assistant")!;
      const types = (assistant.message as { content: { type: string }[] }).content.map((b) => b.type);
      assert.equal(types.includes("thinking"), expectThinking, setting);
      assert.ok(types.includes("text"));
    }
  });

  it("two requests of one session in flight at once never interleave, lose or double a record", async () => {
    await using tap = await startTestTap(stub.url, {}, {}, dir);
    const base = new Conversation(tap, "parallel");
    await base.say("start");
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => {
      const c = new Conversation(tap, "parallel");
      c.messages.push(...base.messages);
      return c.say(`parallel ${i}`);
    }));
    await tap.stop();
    assert.ok(results.every((r) => r.status === 200));
    const records = allRecords(`${dir}/mirror/parallel`);
    assert.equal(records.length, 2 + 8 * 2);
    assert.equal(new Set(records.map((r) => r.uuid)).size, records.length);
    const starts = records.filter((r) => r.parentUuid === records[1].uuid);
    assert.equal(starts.length, 8, "each parallel turn branches from the shared answer");
  });
});
