// Reading a session the real Claude Code made through the tap: the interactive CLI (in a pseudo-terminal,
// test/support/terminal.ts) with its session-title request allowed, two prompts, one with a tool call.
// The title is the one Claude Code asked the model for (mirrored in side/, not as a second conversation);
// tokens and cost add up to the usage the records carry; `show` prints the session as plain text with the
// environment block in one line, no tags and no control characters; `search` and `usage` find it. Runs
// under `bun test` and `deno test`.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { hasControl } from "../../src/transcript/records.ts";
import { runTap } from "../support/child.ts";
import { CLAUDE_BIN, claudeEnv, makeScratch, pollUntil, type Rec, type Scratch } from "../support/claude.ts";
import { cli } from "../support/recover.ts";
import { STUB_USAGE } from "../support/sse-build.ts";
import type { StubUpstream } from "../support/stub-upstream.ts";
import { driveOnce } from "../support/scenario.ts";
import { readTree, type TestTap, withTap } from "../support/tap.ts";
import { claudeInput, TerminalSession } from "../support/terminal.ts";

const PROMPTS = ["Fix the flaky login test in auth.ts", "RUNTOOL please"];

describe("a session the real Claude Code made, read back (titles, tokens, show, search, usage)", { timeout: 150_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  let term: TerminalSession | undefined;
  let sessionId = "";
  let files: [string, Rec[]][] = [];
  const run = (args: string[]) => runTap([...args, "--mirror-dir", tap.root], { env: { TZ: "UTC", HOME: scratch.home } });

  withTap((started) => ({ stub, tap } = started));
  const ran = driveOnce(drive);

  async function drive(): Promise<void> {
    scratch = makeScratch();
    writeFileSync(
      join(scratch.home, ".claude.json"),
      JSON.stringify({ hasCompletedOnboarding: true, projects: { [scratch.project]: { hasTrustDialogAccepted: true } } }),
    );
    // Claude Code asks for a session title only when nonessential traffic is allowed; telemetry, error
    // reports and updates stay off one by one instead.
    const env = { ...claudeEnv(tap.url, scratch), DISABLE_TELEMETRY: "1", DISABLE_ERROR_REPORTING: "1", DISABLE_AUTOUPDATER: "1" } as Record<string, string>;
    delete env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC;
    term = await TerminalSession.start({ command: [CLAUDE_BIN, "--allowedTools", "Bash"], cwd: scratch.project, env, width: 200, height: 50 });
    const t = term;
    const idle = (s: string) => claudeInput(s) === "" && !/esc to interrupt/i.test(s);
    await t.waitFor("the API key question", /Do you want to use this API key\?/, 30_000);
    await t.press("Up");
    await t.waitFor("Yes selected", /❯ Yes/, 5_000);
    await t.press("Enter");
    for (const prompt of PROMPTS) {
      await t.waitFor("an empty, idle prompt", idle);
      const before = stub.requests.length;
      await t.type(prompt);
      await t.waitFor(`"${prompt}" in the input box`, (s) => claudeInput(s) === prompt, 5_000);
      await t.press("Enter");
      await t.waitFor(`the answer to "${prompt}"`, (s) => [...s.matchAll(/Done \(reply (\d+)\)\./g)].some((m) => Number(m[1]) > before) && idle(s), 30_000);
    }
    await t.press("C-c");
    await t.waitFor("the exit hint", /Press Ctrl-C again to exit/, 5_000);
    await t.press("C-c");
    await t.waitForExit(10_000);
    sessionId = stub.requests.find((r) => r.headers["x-claude-code-session-id"])?.headers["x-claude-code-session-id"] ?? "";
    const answered = () => stub.requests.filter((r) => r.url.startsWith("/v1/messages")).length;
    files = await pollUntil(
      () => [...readTree(tap.root).entries()].filter(([p]) => p.startsWith(`${sessionId}/`)) as [string, Rec[]][],
      (f) => f.flatMap(([, r]) => r).filter((r) => r.type === "assistant").length >= answered(),
    );
  }

  after(async () => {
    term?.kill();
    scratch?.cleanup();
  });

  const mainRecords = () => files.filter(([p]) => p.split("/").length === 2).flatMap(([, r]) => r);
  const sideRecords = () => files.filter(([p]) => p.startsWith(`${sessionId}/side/`)).flatMap(([, r]) => r);

  it("the title Claude Code asked for is the session's title; the title exchange is in side/, not a second conversation", async () => {
    ran();
    const titleRequest = stub.requests.findIndex((r) => new TextDecoder().decode(r.body).includes("You are naming a coding session"));
    assert.ok(titleRequest >= 0, "Claude Code asked for a title");
    const expected = `Stub title (reply ${titleRequest + 1})`;
    assert.ok(sideRecords().some((r) => JSON.stringify(r.message?.content).includes(expected)), "mirrored into side/");
    assert.ok(!mainRecords().some((r) => JSON.stringify(r.message?.content ?? "").includes("<session>")), "not in the main chain");
    const [entry] = JSON.parse((await cli(["list", "--json", "--mirror-dir", tap.root])).stdout);
    assert.equal(entry.sessionId, sessionId);
    assert.equal(entry.title, expected);
    assert.equal(entry.firstPrompt, PROMPTS[0]);
  });

  it("tokens and cost add up to the usage the records carry, side requests included", async () => {
    ran();
    const answers = [...mainRecords(), ...sideRecords()].filter((r) => r.type === "assistant");
    const sum = (key: string) => answers.reduce((n, r) => n + (r.message.usage?.[key] ?? 0), 0);
    const requests = stub.requests.filter((r) => r.url.startsWith("/v1/messages")).length;
    assert.equal(answers.length, requests, "one answer per request");
    assert.equal(sum("input_tokens"), requests * STUB_USAGE.input_tokens, "the stub's usage, as recorded");
    const [entry] = JSON.parse((await cli(["list", "--json", "--mirror-dir", tap.root])).stdout);
    assert.deepEqual(entry.usage, {
      inputTokens: sum("input_tokens"),
      outputTokens: sum("output_tokens"),
      cacheCreationTokens: sum("cache_creation_input_tokens"),
      cacheReadTokens: sum("cache_read_input_tokens"),
    });
    assert.deepEqual(entry.models, ["claude-opus-5-5"]);
    const expected = (sum("input_tokens") * 4 + sum("output_tokens") * 20 + sum("cache_read_input_tokens") * 0.2) / 1e6;
    assert.ok(Math.abs(entry.costUSD - expected) < 1e-9, `${entry.costUSD} vs ${expected} (claude-opus-5-5 at $4/$20/$0.20 per million)`);
    const usage = JSON.parse((await run(["usage", "--json"])).stdout);
    assert.equal(usage.total.answers, requests);
    assert.equal(usage.total.costUSD, entry.costUSD);
    assert.deepEqual(usage.projects.map((p: { cwd: string }) => p.cwd), [scratch.project]);
  });

  it("show: plain text, the environment block in one line, the tool call in one line with its result, no tags, no control characters", async () => {
    ran();
    const r = await run(["show", sessionId.slice(0, 8)]);
    assert.equal(r.code, 0, r.stderr);
    const text = r.stdout;
    assert.ok(!hasControl(text), "no control characters");
    assert.doesNotMatch(text, /<\/?[a-z][a-z-]*>/, "no tags");
    assert.match(text, /^Title +Stub title \(reply \d+\)$/m);
    assert.match(
      text,
      new RegExp(
        `^  ⚙ environment from Claude Code \\(\\d+\\.\\d KB; cwd ${scratch.project.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}, model claude-opus-5-5\\)$`,
        "m",
      ),
    );
    assert.match(text, /^ {2}● Bash: echo hi-from-tool\n {4}⎿ hi-from-tool$/m);
    for (const p of PROMPTS) assert.ok(text.includes(`\n  ${p}\n`), p);
    const lines = text.split("\n").length;
    const full = (await run(["show", sessionId, "--full"])).stdout;
    assert.ok(full.split("\n").length > lines * 3, `--full shows the context (${full.split("\n").length} lines against ${lines})`);
    assert.ok(lines < 60, `${lines} lines for two turns`);
  });

  it("search finds the tool's output and names the session by its title; usage and list agree", async () => {
    ran();
    const hits = JSON.parse((await run(["search", "HI-FROM-TOOL", "--json"])).stdout);
    assert.ok(hits.length >= 2, "the call and its result");
    assert.ok(hits.every((h: { sessionId: string; title: string }) => h.sessionId === sessionId && /^Stub title/.test(h.title)));
    assert.deepEqual(hits.map((h: { role: string }) => h.role).sort(), ["assistant", "tool result"]);
  });
});
