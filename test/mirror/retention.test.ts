// An archive that outlives Claude Code's cleanup (docs/DESIGN.md "Retention"): Claude Code deletes
// transcripts older than its `cleanupPeriodDays` (30 by default), so the mirror's retention is off by
// default. A session mirrored by a real tap, its files set 45 days back, survives the sweep of a tap
// started with the default settings; `list` shows it as restorable once Claude Code's transcript is gone
// and `restore` brings it back; SESSIONTAP_RETENTION_DAYS still turns the age limit on. Runs under Bun
// and Deno.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, startTestTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";
import { cli } from "../support/recover.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import type { Rec } from "../support/claude.ts";

const SESSION = "01d5e55e-0000-4000-8000-000000000045";
const DAY = 86_400_000;

/** Every path under `dir` (files and directories), deepest first. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...walk(path));
    out.push(path);
  }
  return out;
}

describe("retention: the mirror keeps what Claude Code's cleanup deletes", () => {
  let stub: StubUpstream;
  let dir: string;
  let root: string;
  let claude: string;
  let cwd: string;
  let before45: string[];

  before(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-retention-`);
    root = `${dir}/mirror`;
    claude = `${dir}/claude`;
    cwd = `${dir}/proj`;
    mkdirSync(`${claude}/projects`, { recursive: true });
    // A session mirrored by a tap on its defaults, with the environment block Claude Code sends.
    const system = [{ type: "text", text: `You are Claude Code.\n# Environment\n - Primary working directory: ${cwd}` }];
    await using first = await startTestTap(stub.url, {}, {}, dir);
    const c = new Conversation(first.url, SESSION, { system, headers: { "user-agent": "claude-cli/2.1.332 (external, cli)" } });
    assert.equal((await c.say("a question from six weeks ago")).status, 200);
    assert.equal((await c.say("and a follow-up")).status, 200);
    await first.close();
    // Six weeks pass: every file and directory of the session last changed 45 days ago.
    const then = (Date.now() - 45 * DAY) / 1000;
    for (const path of walk(`${root}/${SESSION}`)) utimesSync(path, then, then);
    before45 = walk(`${root}/${SESSION}`).filter((p) => p.endsWith(".jsonl")).map((p) => readFileSync(p, "utf8"));
    assert.ok(before45.length >= 1);
  });
  after(async () => {
    await stub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a tap started with the default settings keeps the 45-day-old session through its sweep", async () => {
    await using tap = await startTestTap(stub.url, {}, {}, dir);
    // Traffic flows (sessionless: nothing of Claude Code's to lose, so the list below names one lost session).
    assert.equal((await new Conversation(tap.url, null).say("traffic flows")).status, 200);
    await tap.engine!.query("mirror.sweep");
    await tap.close();
    const now = walk(`${root}/${SESSION}`).filter((p) => p.endsWith(".jsonl")).map((p) => readFileSync(p, "utf8"));
    assert.deepEqual(now, before45, "every file of the session kept, unchanged");
    assert.equal(allRecords(`${root}/${SESSION}`).filter((r) => r.type === "user" || r.type === "assistant").length, 4);
  });

  it("list shows it restorable once Claude Code's cleanup has deleted its transcript, and restore brings it back", async () => {
    const run = (args: string[]) => cli([...args, "--mirror-dir", root, "--claude-dir", claude], {}, { cwd: dir });
    const listed = JSON.parse((await run(["list", "--json"])).stdout) as Rec[];
    assert.deepEqual(listed.filter((s) => s.sessionId === SESSION).map((s) => [s.claudeTranscript, s.cwd]), [["missing", cwd]]);
    const text = await run(["list"]);
    assert.match(text.stdout, new RegExp(`^${SESSION} .* missing +${cwd}$`, "m"));
    assert.match(
      text.stdout,
      /^1 session whose Claude Code transcript is missing, a stub or behind the mirror \(removed by its cleanup, cut, or lost\); the mirror holds it; to put it back:$/m,
    );
    assert.match(text.stdout, new RegExp(`^ {2}sessiontap restore ${SESSION}$`, "m"), "the footer offers its restore");
    const restored = await run(["restore", SESSION]);
    assert.equal(restored.code, 0, restored.stderr);
    assert.ok(existsSync(`${claude}/projects/${encodeProjectDir(cwd)}/${SESSION}.jsonl`));
    const after = JSON.parse((await run(["list", "--json"])).stdout) as Rec[];
    assert.equal(after.find((s) => s.sessionId === SESSION)!.claudeTranscript, "intact");
  });

  it("SESSIONTAP_RETENTION_DAYS still limits the age: at 30 the same sweep removes the session", async () => {
    await using tap = await startTestTap(stub.url, { SESSIONTAP_RETENTION_DAYS: "30" }, {}, dir);
    await tap.engine!.query("mirror.sweep");
    await tap.close();
    assert.equal(existsSync(`${root}/${SESSION}`), false, "its files swept and its directory pruned");
    assert.ok(existsSync(`${root}/unknown`), "a young session is kept");
  });
});
