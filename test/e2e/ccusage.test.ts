// Readable by the ecosystem (docs/DESIGN.md "Readable by other tools"): the real ccusage CLI (the pinned dev
// dependency, run from node_modules as a user runs it) over a mirror that real Claude Code traffic made
// through a real tap — 2.1.328 with its default model and 2.1.332 with claude-sonnet-4-5, each a tool
// call and a resumed follow-up — counts per day and per model exactly the tokens it counts over Claude
// Code's own transcripts of the same sessions, and exactly what `sessiontap usage --json` reports; after
// Claude Code's transcripts are gone (as its cleanup removes them), the transcripts `sessiontap restore`
// writes count the same again. Runs under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, rmSync, symlinkSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { readTree, type TestTap, withTap } from "../support/tap.ts";
import { cli } from "../support/recover.ts";
import { CLAUDE_BIN, CLAUDE_NEXT_BIN, describeRun, findTranscripts, makeScratch, pollUntil, type Rec, runClaude, type Scratch } from "../support/claude.ts";
import { ROOT } from "../support/child.ts";

const CCUSAGE = join(ROOT, "node_modules", ".bin", "ccusage");
const CLIENTS = [
  { name: "2.1.328", bin: CLAUDE_BIN, model: [] as string[] },
  { name: "2.1.332 --model claude-sonnet-4-5", bin: CLAUDE_NEXT_BIN, model: ["--model", "claude-sonnet-4-5"] },
];

/** Tokens of one day or one model, in the names both reports share. */
type Tokens = { inputTokens: number; outputTokens: number; cacheCreationTokens: number; cacheReadTokens: number };
/** Per day and per model, each sorted: what is compared. */
type Totals = { days: [string, Tokens][]; models: [string, Tokens][] };

const tokens = (t: Rec): Tokens => ({
  inputTokens: t.inputTokens,
  outputTokens: t.outputTokens,
  cacheCreationTokens: t.cacheCreationTokens,
  cacheReadTokens: t.cacheReadTokens,
});

/** Runs `ccusage daily --json` over the Claude data directories `dirs` (CLAUDE_CONFIG_DIR), in UTC days. */
function ccusage(dirs: string[], home: string): Promise<Totals> {
  const args = ["daily", "--json", "--offline", "--timezone", "UTC"];
  const env = { PATH: process.env.PATH ?? "", HOME: home, CLAUDE_CONFIG_DIR: dirs.join(","), NO_COLOR: "1" };
  return new Promise((resolve, reject) => {
    execFile(CCUSAGE, args, { cwd: home, env, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`ccusage ${args.join(" ")} over ${dirs.join(",")}: ${error.message}; ${stderr}`));
      const report = JSON.parse(stdout) as { daily: Rec[] };
      const models = new Map<string, Tokens>();
      for (const day of report.daily) {
        for (const m of day.modelBreakdowns as Rec[]) {
          const sum = models.get(m.modelName) ?? { inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 };
          for (const k of Object.keys(sum) as (keyof Tokens)[]) sum[k] += m[k];
          models.set(m.modelName, sum);
        }
      }
      resolve({ days: report.daily.map((d) => [d.date, tokens(d)] as [string, Tokens]), models: [...models.entries()].sort() });
    });
  });
}

describe("ccusage over the mirror and over restored transcripts, against Claude Code's own (real traffic)", { timeout: 240_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let work: Scratch;
  const runs: { scratch: Scratch; sessionId: string; transcript: string }[] = [];
  let own: Totals;

  before(async () => {
    work = makeScratch();
  });
  withTap((started) => ({ stub, tap } = started), () => ({ root: work.tmp }));
  before(async () => {
    for (const client of CLIENTS) {
      const scratch = makeScratch();
      const opts = { baseUrl: tap.url, scratch, bin: client.bin, timeoutMs: 60_000 };
      const first = stub.requests.length;
      const one = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash", ...client.model], opts);
      assert.equal(one.code, 0, `${client.name}: ${describeRun(one)}`);
      const sessionId = stub.requests[first].headers["x-claude-code-session-id"];
      const two = await runClaude(["-p", "--resume", sessionId, "and a follow-up", ...client.model], opts);
      assert.equal(two.code, 0, `${client.name}: ${describeRun(two)}`);
      const transcript = findTranscripts(scratch.home).find((p) => basename(p) === `${sessionId}.jsonl`)!;
      assert.ok(transcript, `${client.name}: Claude Code's transcript`);
      runs.push({ scratch, sessionId, transcript });
      await pollUntil(
        () => [...readTree(tap.root).values()].flat().filter((r) => r.type === "assistant" && r.sessionId === sessionId).length,
        (n) => n >= 3,
        5_000,
        `${client.name}: three answers mirrored`,
      );
    }
    own = await ccusage(runs.map((r) => join(r.scratch.home, ".claude")), work.home);
  });

  after(async () => {
    for (const r of runs) r.scratch.cleanup();
    work?.cleanup();
  });

  it("Claude Code's own transcripts: ccusage counts both sessions, both models", () => {
    assert.deepEqual(own.models.map(([m]) => m), ["claude-opus-5-5", "claude-sonnet-4-5"], JSON.stringify(own));
    for (const [, t] of own.models) assert.ok(t.inputTokens > 0 && t.outputTokens > 0, JSON.stringify(t));
  });

  it("the mirror tree (a projects link to its root): the same tokens per day and per model as Claude Code's own", async () => {
    const view = join(dirname(work.home), "ccusage-view");
    mkdirSync(view);
    symlinkSync(tap.root, join(view, "projects"));
    assert.deepEqual(await ccusage([view], work.home), own);
  });

  it("sessiontap usage --json: the same tokens per day and per model", async () => {
    const out = await cli(["usage", "--json", "--mirror-dir", tap.root], {}, { zone: { offsetMinutes: () => 0 } });
    assert.equal(out.code, 0, out.stderr);
    const report = JSON.parse(out.stdout) as { days: Rec[]; models: Rec[] };
    const ours: Totals = {
      days: report.days.map((d) => [d.date, tokens(d.usage)]),
      models: report.models.map((m) => [m.model, tokens(m.usage)] as [string, Tokens]).sort(),
    };
    assert.deepEqual(ours, own);
  });

  it("restored transcripts, after Claude Code's are gone: the same tokens again", async () => {
    for (const r of runs) {
      rmSync(r.transcript); // what Claude Code's cleanup does to a transcript past cleanupPeriodDays
      const out = await cli(["restore", r.sessionId, "--mirror-dir", tap.root, "--claude-dir", join(r.scratch.home, ".claude")]);
      assert.equal(out.code, 0, out.stderr);
      assert.ok(findTranscripts(r.scratch.home).some((p) => basename(p) === `${r.sessionId}.jsonl`), "restored where Claude Code finds it");
    }
    assert.deepEqual(await ccusage(runs.map((r) => join(r.scratch.home, ".claude")), work.home), own);
  });
});
