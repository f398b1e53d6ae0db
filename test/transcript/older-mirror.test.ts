// Mirror files written before records carried the client's version (docs/DESIGN.md "Readable by other
// tools"): `version: "sessiontap/0.1.0"`, and `cwd`, `sessionId`, `requestId` written as null when
// unknown. Every command still reads them — list, show, search, usage, export, verify, restore — and a
// restore from them writes a transcript in today's shape (a version number, nothing null a reader
// refuses). Claude Code's own transcripts are never rewritten on reading. Runs under Bun and Deno.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { upgradeOlderRecord } from "../../src/transcript/records.ts";
import { cli, rec, scratchDir, writeMirror } from "../support/recover.ts";
import type { Rec } from "../support/claude.ts";

const ID = "0dd0dd00-0000-4000-8000-000000000001";
const NOCWD = "0dd0dd00-0000-4000-8000-000000000002";
const OLD = { version: "sessiontap/0.1.0", source: "sessiontap" };
const USAGE = { input_tokens: 1000, output_tokens: 10, cache_read_input_tokens: 5, cache_creation_input_tokens: 0 };

/** An answer as the old mirror wrote it: its `requestId` null when the upstream sent none. */
function oldAnswer(uuid: string, parent: string, text: string, extra: Rec): Rec {
  const r = rec("assistant", uuid, parent, [{ type: "text", text }], { ...OLD, ...extra });
  return { ...r, requestId: null, message: { ...(r.message as Rec), usage: USAGE } };
}

describe("mirror files of an older sessiontap", () => {
  const scratch = scratchDir("sessiontap-older-");
  const root = `${scratch.dir}/mirror`;
  const claude = `${scratch.dir}/claude`;
  const cwd = `${scratch.dir}/proj`;
  const run = (args: string[]) =>
    cli([...args, "--mirror-dir", root], { CLAUDE_CONFIG_DIR: claude, TZ: "UTC" }, { cwd: scratch.dir, zone: { offsetMinutes: () => 0 } });

  before(() => {
    mkdirSync(root, { mode: 0o700 });
    const env = { ...OLD, sessionId: ID, cwd };
    writeMirror(root, ID, [
      rec("user", "o-u1", null, "an old question", { ...env, cwd: null }), // the first request named no cwd
      oldAnswer("o-a1", "o-u1", "an old answer", env),
      rec("user", "o-u2", "o-a1", "and another", env),
      oldAnswer("o-a2", "o-u2", "another answer", env),
    ]);
    const none = { ...OLD, sessionId: NOCWD, cwd: null };
    writeMirror(root, NOCWD, [rec("user", "n-u1", null, "where was I", none), oldAnswer("n-a1", "n-u1", "nowhere known", none)]);
  });
  after(() => scratch.cleanup());

  it("list: the sessions, their cwd where any record named it, their tokens", async () => {
    const out = await run(["list", "--json"]);
    assert.equal(out.code, 0, out.stderr);
    const byId = new Map((JSON.parse(out.stdout) as Rec[]).map((s) => [s.sessionId, s]));
    assert.equal(byId.get(ID)!.cwd, cwd);
    assert.equal(byId.get(NOCWD)!.cwd, null);
    assert.deepEqual(byId.get(ID)!.usage, { inputTokens: 2000, outputTokens: 20, cacheCreationTokens: 0, cacheReadTokens: 10 });
    assert.equal(byId.get(ID)!.firstPrompt, "an old question");
    const text = await run(["list"]);
    assert.match(text.stdout, new RegExp(`^${NOCWD} .* \\? \\(cwd unknown\\)$`, "m"));
  });

  it("show, search, usage and verify read them", async () => {
    const show = await run(["show", ID, "--json"]);
    assert.equal(show.code, 0, show.stderr);
    const shown = JSON.parse(show.stdout) as Rec;
    assert.ok(JSON.stringify(shown).includes("another answer"));
    const search = await run(["search", "old answer", "--json"]);
    assert.equal(search.code, 0, search.stderr);
    assert.equal((JSON.parse(search.stdout) as Rec[]).length, 1);
    const usage = await run(["usage", "--json"]);
    assert.equal(usage.code, 0, usage.stderr);
    const report = JSON.parse(usage.stdout) as Rec;
    assert.deepEqual((report.projects as Rec[]).map((p) => [p.cwd, p.answers]).sort(), [[cwd, 2], ["unknown", 1]]);
    const verify = await run(["verify"]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  });

  it("export --format jsonl and restore write today's shape: a version number, nothing null", async () => {
    const exported = await run(["export", ID, "--format", "jsonl"]);
    assert.equal(exported.code, 0, exported.stderr);
    const lines = exported.stdout.trim().split("\n").map((l) => JSON.parse(l) as Rec);
    assert.ok(lines.length >= 4);
    for (const r of lines) {
      assert.equal(r.version, "0.1.0");
      for (const key of ["cwd", "sessionId", "requestId"]) assert.notEqual(r[key], null, `${key} of ${r.uuid}`);
    }
    const restored = await run(["restore", ID]);
    assert.equal(restored.code, 0, restored.stderr);
    const path = `${claude}/projects/${encodeProjectDir(cwd)}/${ID}.jsonl`;
    const text = readFileSync(path, "utf8");
    assert.doesNotMatch(text, /"(cwd|sessionId|requestId|version)":null/);
    assert.doesNotMatch(text, /sessiontap\//);
    const records = text.trim().split("\n").map((l) => JSON.parse(l) as Rec).filter((r) => r.type === "user" || r.type === "assistant");
    assert.ok(records.length >= 4);
    assert.ok(records.every((r) => r.version === "0.1.0" && r.cwd === cwd && r.source === "sessiontap"));
    assert.equal((await run(["restore", NOCWD])).code, 1, "no cwd: asks for --cwd");
    assert.equal((await run(["restore", NOCWD, "--cwd", cwd])).code, 0);
  });

  it("only the tap's own records are upgraded: Claude Code's are read as they are", () => {
    const own = { type: "user", version: "sessiontap/0.1.0", cwd: null };
    assert.deepEqual(upgradeOlderRecord({ ...own }), own);
    assert.deepEqual(upgradeOlderRecord({ ...own, source: "sessiontap", requestId: null, sessionId: null }), {
      type: "user",
      version: "0.1.0",
      source: "sessiontap",
    });
    const today = { type: "user", version: "2.1.332", cwd: "/p", source: "sessiontap" };
    assert.deepEqual(upgradeOlderRecord({ ...today }), today);
  });
});
