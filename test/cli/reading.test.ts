// `search`, `usage` and `list` through the real process (the compiled binary when SESSIONTAP_BINARY is
// set): what they print, as text and as JSON, on a mirror with a generated title, two projects, three days
// and a model the price table lacks; the reader's time zone (TZ) deciding the days; a price file; exit
// statuses. Then colour: only on a terminal, never with NO_COLOR. Runs under Bun and Deno.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { hasControl } from "../../src/transcript/records.ts";
import { runTap } from "../support/child.ts";
import { cli, rec, scratchDir, writeMirror } from "../support/recover.ts";

const A = "a1a1a1a1-0000-4000-8000-000000000001";
const B = "b2b2b2b2-0000-4000-8000-000000000002";
const ESC = String.fromCharCode(27);

/** An assistant record with usage from `model`, at `time`. */
function answer(uuid: string, parent: string, time: string, model: string, input: number, output: number, extra: Record<string, unknown>, text = "ok") {
  return rec("assistant", uuid, parent, [], {
    ...extra,
    timestamp: time,
    message: {
      role: "assistant",
      id: `msg_${uuid}`,
      model,
      content: [{ type: "text", text }],
      usage: { input_tokens: input, output_tokens: output, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    },
  });
}

describe("search, usage and list through the real process", { timeout: 120_000 }, () => {
  const scratch = scratchDir("sessiontap-reading-");
  const root = `${scratch.dir}/mirror`;
  const run = (args: string[], env: Record<string, string> = {}) => runTap([...args, "--mirror-dir", root], { env: { TZ: "UTC", ...env } });

  before(() => {
    const a = { sessionId: A, cwd: "/p/alpha" };
    writeMirror(root, A, [
      rec("user", "a-u1", null, "Fix the flaky LOGIN test", { ...a, timestamp: "2026-01-01T23:30:00.000Z" }),
      answer("a-a1", "a-u1", "2026-01-01T23:31:00.000Z", "claude-haiku-4-5-20251001", 1_000_000, 0, a, `Looking at the login ${ESC}[1mtest${ESC}[0m now.`),
      rec("user", "a-u2", "a-a1", "and the signup one", { ...a, timestamp: "2026-01-02T10:00:00.000Z" }),
      answer("a-a2", "a-u2", "2026-01-02T10:01:00.000Z", "claude-haiku-4-5-20251001", 0, 200_000, a),
    ]);
    // Claude Code's title exchange, as the tap mirrors it into side/.
    writeMirror(`${root}/${A}`, "side", [
      rec("user", "a-t1", null, "<session>\nFix the flaky LOGIN test\n</session>", { ...a, isSidechain: true, timestamp: "2026-01-01T23:30:01.000Z" }),
      answer("a-t2", "a-t1", "2026-01-01T23:30:02.000Z", "claude-haiku-4-5-20251001", 500_000, 0, { ...a, isSidechain: true }, `{"title": "Flaky login test"}`),
    ]);
    const b = { sessionId: B, cwd: "/p/beta" };
    writeMirror(root, B, [
      rec("user", "b-u1", null, "write the docs about login", { ...b, timestamp: "2026-01-03T09:00:00.000Z" }),
      answer("b-a1", "b-u1", "2026-01-03T09:01:00.000Z", "claude-mystery-1", 1000, 10, b),
      // A prompt rewound away: the newer one after the same answer is the current branch.
      rec("user", "b-u2", "b-a1", "try the walrus approach", { ...b, timestamp: "2026-01-03T09:02:00.000Z" }),
      rec("user", "b-u3", "b-a1", "try the other approach", { ...b, timestamp: "2026-01-03T09:03:00.000Z" }),
    ]);
    writeFileSync(`${scratch.dir}/prices.json`, JSON.stringify({ checked: "2026-11-30", models: { "claude-mystery-1": { input: 1000, output: 1000 } } }));
    writeFileSync(`${scratch.dir}/bad-prices.json`, `{"models": {"claude-mystery-1": {"input": "cheap"}}}`);
  });
  after(() => scratch.cleanup());

  it("search QUERY: every message that matches, case-insensitive, with session, title, time, role and the match marked", async () => {
    const r = await run(["search", "login"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "");
    const lines = r.stdout.trimEnd().split("\n");
    assert.deepEqual(lines.filter((l) => /^[0-9a-f]{8}-/.test(l)).sort(), [
      `${A}  2026-01-01 23:30  user  Flaky login test`,
      `${A}  2026-01-01 23:31  assistant  Flaky login test`,
      `${B}  2026-01-03 09:00  user  write the docs about login`,
    ]);
    assert.ok(r.stdout.includes("  Fix the flaky »LOGIN« test\n"), r.stdout);
    assert.ok(r.stdout.includes("  Looking at the »login« test now.\n"), "marked, and the record's escape codes gone");
    assert.ok(!hasControl(r.stdout), "no colour into a pipe");
    assert.match(r.stdout, /\n3 messages in 2 sessions match\./);
  });

  it("search: a hit on a branch the conversation left is marked as off the current branch; one hit is 'matches'", async () => {
    const r = await run(["search", "walrus"]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.startsWith(`${B}  2026-01-03 09:02  user  write the docs about login  (off the current branch: rewound or retried)\n`), r.stdout);
    assert.match(r.stdout, /\n1 message in 1 session matches\. Open one/);
    const current = await run(["search", "other approach", "--json"]);
    assert.deepEqual(JSON.parse(current.stdout).map((h: { uuid: string; offBranch: boolean }) => [h.uuid, h.offBranch]), [["b-u3", false]]);
    const off = await run(["search", "walrus", "--json"]);
    assert.deepEqual(JSON.parse(off.stdout).map((h: { uuid: string; offBranch: boolean }) => [h.uuid, h.offBranch]), [["b-u2", true]]);
  });

  it("search --json, --session, --regex; nothing found is exit 1 with one line", async () => {
    const json = await run(["search", "LOGIN", "--json", "--session", "a1a1"]);
    assert.equal(json.code, 0, json.stderr);
    const hits = JSON.parse(json.stdout);
    assert.deepEqual(hits.map((h: Record<string, unknown>) => [h.sessionId, h.uuid, h.role, h.title, h.timestamp]), [
      [A, "a-u1", "user", "Flaky login test", "2026-01-01T23:30:00.000Z"],
      [A, "a-a1", "assistant", "Flaky login test", "2026-01-01T23:31:00.000Z"],
    ]);
    assert.deepEqual(hits[0].marks.map(([a, b]: [number, number]) => hits[0].snippet.slice(a, b)), ["LOGIN"]);
    const regex = await run(["search", "--regex", "^write .* login$", "--json"]);
    assert.deepEqual(JSON.parse(regex.stdout).map((h: { uuid: string }) => h.uuid), ["b-u1"]);
    const none = await run(["search", "zebra"]);
    assert.equal(none.code, 1);
    assert.equal(none.stdout, "");
    assert.match(none.stderr, /^sessiontap: nothing matches "zebra" in the 2 sessions in \S+\n$/);
    const nothing = await run(["search", "zebra", "--json"]);
    assert.deepEqual([nothing.code, nothing.stdout.trim()], [1, "[]"]);
    const unknown = await run(["search", "x", "--session", "ffff"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^sessiontap: no mirrored session matches "ffff"/);
  });

  it("usage --json: per day in the reader's zone, per project, per model, with costs; an unpriced model makes a cost null", async () => {
    const r = await run(["usage", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.equal(report.timeZone, "UTC");
    assert.equal(report.prices.checked.length, 10);
    assert.deepEqual(report.days.map((d: Record<string, unknown>) => [d.date, d.answers, d.costUSD, d.projects]), [
      ["2026-01-01", 2, 1.5, ["/p/alpha"]], // the title answer (side) and the first answer: $1/M input for Haiku 4.5
      ["2026-01-02", 1, 1, ["/p/alpha"]], // 200k output at $5/M
      ["2026-01-03", 1, null, ["/p/beta"]],
    ]);
    assert.deepEqual(report.projects.map((p: Record<string, unknown>) => [p.cwd, p.sessions, p.costUSD]), [["/p/alpha", 1, 2.5], ["/p/beta", 1, null]]);
    assert.deepEqual(report.models.map((m: Record<string, unknown>) => m.model), ["claude-haiku-4-5-20251001", "claude-mystery-1"]);
    assert.deepEqual(report.total.usage, { inputTokens: 1_501_000, outputTokens: 200_010, cacheCreationTokens: 0, cacheReadTokens: 0 });
    assert.deepEqual([report.total.costUSD, report.total.knownCostUSD, report.total.unpriced], [null, 2.5, ["claude-mystery-1"]]);

    const tokyo = JSON.parse((await run(["usage", "--json"], { TZ: "Asia/Tokyo" })).stdout);
    assert.equal(tokyo.timeZone, "UTC+09:00");
    assert.deepEqual(
      tokyo.days.map((d: { date: string; answers: number }) => [d.date, d.answers]),
      [["2026-01-02", 3], ["2026-01-03", 1]],
      "the reader's days",
    );
    const since = JSON.parse((await run(["usage", "--json", "--since", "2026-01-02"])).stdout);
    assert.deepEqual([since.since, since.days.length, since.total.answers], ["2026-01-02", 2, 2]);
  });

  it("usage as text: the tables, the total, and where the prices come from; SESSIONTAP_PRICES adds a model; a bad file is one line, exit 1", async () => {
    const r = await run(["usage"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Usage: every recorded answer \(days in UTC\)\n\nDAY +SESSIONS +ANSWERS +INPUT +OUTPUT +CACHE WRITE +CACHE READ +COST +PROJECTS\n2026-01-01 +1 +2 +1\.50M +0 +0 +0 +\$1\.50 +\/p\/alpha\n/,
    );
    assert.match(r.stdout, /^2026-01-03 .* \? +\/p\/beta$/m);
    assert.match(r.stdout, /^Total: 2 sessions, 4 answers: 1\.50M in · 200k out · cost unknown \(claude-mystery-1 not in the price table\)$/m);
    assert.match(r.stdout, /^Costs are estimates at list prices: built-in table \(Anthropic list prices\), checked \d{4}-\d\d-\d\d\./m);
    const priced = JSON.parse((await run(["usage", "--json"], { SESSIONTAP_PRICES: `${scratch.dir}/prices.json` })).stdout);
    assert.equal(priced.total.costUSD, 2.5 + (1000 * 1000 + 10 * 1000) / 1e6);
    assert.equal(priced.prices.checked, "2026-11-30");
    const bad = await run(["usage"], { SESSIONTAP_PRICES: `${scratch.dir}/bad-prices.json` });
    assert.equal(bad.code, 1);
    assert.equal(bad.stdout, "");
    assert.match(
      bad.stderr,
      /^sessiontap: the price file \S+bad-prices\.json \(SESSIONTAP_PRICES\) "claude-mystery-1"\.input must be a number of dollars per million tokens, 0 or more\n$/,
    );
  });

  it("list: the generated title, the project, tokens and cost; --json adds title, usage and costUSD; --since filters", async () => {
    const r = await run(["list"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^${A}  2026-01-02 10:01 +1\\.70M +\\$2\\.50  missing +/p/alpha\\n  Flaky login test$`, "m"));
    assert.match(r.stdout, new RegExp(`^${B}  2026-01-03 09:03 +1\\.01k +\\? +missing +/p/beta\\n  write the docs about login$`, "m"));
    // Both transcripts are missing (no Claude Code dir): the footer offers the restore of each, not of the first alone.
    assert.match(r.stdout, /^2 sessions whose Claude Code transcript is missing, a stub or behind the mirror .*to put one back:$/m);
    assert.match(r.stdout, new RegExp(`:\\n  sessiontap restore ${B}\\n  sessiontap restore ${A}\\n`));
    const list = JSON.parse((await run(["list", "--json"])).stdout);
    const a = list.find((s: { sessionId: string }) => s.sessionId === A);
    assert.equal(a.title, "Flaky login test");
    assert.equal(a.firstPrompt, "Fix the flaky LOGIN test");
    assert.deepEqual(a.usage, { inputTokens: 1_500_000, outputTokens: 200_000, cacheCreationTokens: 0, cacheReadTokens: 0 });
    assert.equal(a.costUSD, 2.5);
    assert.equal(list.find((s: { sessionId: string }) => s.sessionId === B).costUSD, null);
    const recent = JSON.parse((await run(["list", "--json", "--since", "2026-01-03"])).stdout);
    assert.deepEqual(recent.map((s: { sessionId: string }) => s.sessionId), [B]);
  });

  it("colour only on a terminal, and never with NO_COLOR", async () => {
    const tty = { isTTY: true, zone: { offsetMinutes: () => 0 } };
    const coloured = await cli(["search", "login", "--mirror-dir", root], {}, tty);
    assert.ok(coloured.stdout.includes(`${ESC}[1;31mlogin${ESC}[0m`), coloured.stdout);
    const plain = await cli(["search", "login", "--mirror-dir", root], { NO_COLOR: "1" }, tty);
    assert.ok(!hasControl(plain.stdout) && plain.stdout.includes("»login«"));
    const show = await cli(["show", "a1a1", "--mirror-dir", root], {}, tty);
    assert.ok(show.stdout.includes(`${ESC}[1;36mUser${ESC}[0m`));
    assert.ok(!hasControl((await cli(["show", "a1a1", "--mirror-dir", root], { NO_COLOR: "yes" }, tty)).stdout));
    assert.ok(!hasControl((await cli(["show", "a1a1", "--mirror-dir", root], {}, { isTTY: false })).stdout));
  });
});
