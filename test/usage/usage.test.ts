// Tokens and costs computed on recorded sessions and checked against the records: Claude Code's own
// transcripts (one record per block, the usage repeated: each answer once), a mirror made by replaying the
// real interactive capture through a tap (main, side requests counted too), and the per-day, per-project,
// per-model report in a given time zone. Runs under Bun and Deno.
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dayStart, sinceStart, type Zone } from "../../src/utils/local-time.ts";
import { MirrorReader } from "../../src/storage/mirror-reader.ts";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { BUILTIN_PRICES, costOf } from "../../src/usage/prices.ts";
import { type Answer, answersOf, sessionAnswers, totalsOf, usageReport } from "../../src/usage/tokens.ts";
import { STUB_USAGE } from "../support/sse-build.ts";
import type { StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";
import { cli, rec, replayCapture } from "../support/recover.ts";
import { parseJsonl } from "../../src/protocol/json.ts";

const FIXTURES = new URL("../fixtures/claude-code/", import.meta.url);
const transcript = (name: string) => parseJsonl(readFileSync(new URL(name, FIXTURES), "utf8")).records;

describe("tokens from Claude Code's own transcripts", () => {
  it("a real 1.0.98 transcript: seven answers over fifteen block records, each counted once at its final output", () => {
    const answers = answersOf(transcript("real_v1.0.98_1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"), "main");
    assert.equal(answers.length, 7);
    const t = totalsOf(answers, BUILTIN_PRICES);
    assert.deepEqual(t.usage, { inputTokens: 93, outputTokens: 953, cacheCreationTokens: 12698, cacheReadTokens: 103219 });
    assert.deepEqual(t.models, ["claude-sonnet-4-20250514"]);
    assert.ok(t.costUSD !== null && Math.abs(t.costUSD - (93 * 3 + 953 * 15 + 12698 * 3.75 + 103219 * 0.3) / 1e6) < 1e-9, String(t.costUSD));
  });

  it("2.1.328 transcripts: the tool session and the interactive one", () => {
    assert.deepEqual(totalsOf(answersOf(transcript("cc-2.1.328-tool-session/transcript.jsonl"), "main"), BUILTIN_PRICES).usage, {
      inputTokens: 300,
      outputTokens: 48,
      cacheCreationTokens: 0,
      cacheReadTokens: 150,
    });
    const interactive = totalsOf(answersOf(transcript("cc-2.1.328-interactive-compact-rewind/transcript.jsonl"), "main"), BUILTIN_PRICES);
    assert.equal(interactive.answers, 5);
    assert.deepEqual(interactive.usage, { inputTokens: 500, outputTokens: 66, cacheCreationTokens: 0, cacheReadTokens: 250 });
    assert.equal(interactive.costUSD, (500 * 4 + 66 * 20 + 250 * 0.2) / 1e6, "claude-opus-5-5 at its list price");
  });

  it("a reconstructed record or one without usage is no answer; an unknown model makes the sum's cost null, not smaller", () => {
    const records = [
      rec("assistant", "a1", null, [{ type: "text", text: "x" }], {
        message: { id: "m1", model: "claude-haiku-4-5", usage: { input_tokens: 1000, output_tokens: 100 }, content: [] },
      }),
      rec("assistant", "a2", "a1", [{ type: "text", text: "y" }], {
        reconstructed: true,
        message: { id: "m2", model: "claude-haiku-4-5", usage: { input_tokens: 5, output_tokens: 5 }, content: [] },
      }),
      rec("assistant", "a3", "a2", [{ type: "text", text: "z" }]),
      rec("assistant", "a4", "a3", [{ type: "text", text: "w" }], {
        message: { id: "m4", model: "claude-unknown-9", usage: { input_tokens: 10, output_tokens: 1 }, content: [] },
      }),
    ];
    const answers = answersOf(records, "main");
    assert.deepEqual(answers.map((a) => a.id), ["m1", "m4"]);
    const t = totalsOf(answers, BUILTIN_PRICES);
    assert.equal(t.costUSD, null);
    assert.deepEqual(t.unpriced, ["claude-unknown-9"]);
    assert.equal(t.knownCostUSD, costOf(BUILTIN_PRICES, answers[0]));
  });
});

describe("tokens and cost of a mirrored session (the real interactive capture replayed through a tap)", { timeout: 60_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let session = "";
  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    session = await replayCapture(tap, stub);
  });

  it("every answer the API billed: the conversation's and the side requests' (the two compaction summaries)", async () => {
    const data = await new MirrorReader(nodeFs, tap.root).load(session);
    const answers = sessionAnswers(data);
    const requests = stub.requests.filter((r) => r.url.startsWith("/v1/messages")).length;
    assert.equal(answers.length, requests, "one answer per request the tap saw");
    assert.deepEqual(answers.map((a) => a.scope).filter((s) => s === "side").length, data.side.filter((r) => r.type === "assistant").length);
    assert.ok(data.side.length >= 4, "the summarising exchanges are in side/");
    const each = STUB_USAGE;
    const list = JSON.parse((await cli(["list", "--json", "--mirror-dir", tap.root])).stdout);
    assert.deepEqual(list[0].usage, {
      inputTokens: each.input_tokens * requests,
      outputTokens: each.output_tokens * requests,
      cacheCreationTokens: 0,
      cacheReadTokens: each.cache_read_input_tokens * requests,
    });
    assert.ok(Math.abs(list[0].costUSD - requests * (100 * 3 + 10 * 15 + 50 * 0.3) / 1e6) < 1e-9, `claude-sonnet-4-5 at list price: ${list[0].costUSD}`);
    assert.equal(list[0].title, "hello interactive world", "no title was generated: the first prompt");
  });
});

describe("the usage report", () => {
  const zone = (hours: number): Zone => ({ offsetMinutes: () => hours * 60 });
  const a = (time: string, model: string, input: number): Answer => ({
    id: null,
    model,
    time: Date.parse(time),
    scope: "main",
    tokens: { inputTokens: input, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 },
    cacheWrite1hTokens: 0,
  });
  const sessions = [
    {
      sessionId: "s1",
      dir: "s1",
      cwd: "/p/one",
      title: "one",
      answers: [a("2026-03-01T22:30:00Z", "claude-haiku-4-5", 1_000_000), a("2026-03-02T01:00:00Z", "claude-haiku-4-5", 1_000_000)],
    },
    { sessionId: "s2", dir: "s2", cwd: "/p/two", title: "two", answers: [a("2026-03-02T12:00:00Z", "claude-mystery", 10)] },
  ];

  it("days are the reader's: the same answers fall on different days in UTC and in UTC+2", () => {
    assert.deepEqual(usageReport(sessions, BUILTIN_PRICES, zone(0)).days.map((d) => [d.date, d.answers, d.sessions, d.projects]), [
      ["2026-03-01", 1, 1, ["/p/one"]],
      ["2026-03-02", 2, 2, ["/p/one", "/p/two"]],
    ]);
    assert.deepEqual(usageReport(sessions, BUILTIN_PRICES, zone(2)).days.map((d) => [d.date, d.answers]), [["2026-03-02", 3]]);
  });

  it("per project and per model, most expensive first; an unpriced model is named and its cost null", () => {
    const r = usageReport(sessions, BUILTIN_PRICES, zone(0));
    assert.deepEqual(r.projects.map((p) => [p.cwd, p.costUSD]), [["/p/one", 2], ["/p/two", null]]);
    assert.deepEqual(r.models.map((m) => [m.model, m.answers, m.costUSD]), [["claude-haiku-4-5", 2, 2], ["claude-mystery", 1, null]]);
    assert.equal(r.total.costUSD, null);
    assert.equal(r.total.knownCostUSD, 2);
    assert.equal(r.total.sessions, 2);
  });

  it("--since counts answers from the start of that day in the reader's zone", () => {
    const now = Date.parse("2026-03-02T12:30:00Z");
    assert.equal(sinceStart("today", now, zone(2)), Date.parse("2026-03-01T22:00:00Z"));
    assert.equal(sinceStart("yesterday", now, zone(0)), Date.parse("2026-03-01T00:00:00Z"));
    assert.equal(sinceStart("7d", now, zone(0)), Date.parse("2026-02-24T00:00:00Z"));
    assert.equal(sinceStart("2026-03-02", now, zone(-5)), Date.parse("2026-03-02T05:00:00Z"));
    const r = usageReport(sessions, BUILTIN_PRICES, zone(0), sinceStart("today", now, zone(0)));
    assert.deepEqual([r.total.answers, r.total.sessions], [2, 2]);
  });

  it("a day starts at local midnight across a change of offset", () => {
    // A zone one hour ahead until 2026-03-29T01:00Z, two hours after (as central Europe in spring).
    const cet: Zone = { offsetMinutes: (ms) => (ms < Date.parse("2026-03-29T01:00:00Z") ? 60 : 120) };
    assert.equal(dayStart("2026-03-29", cet), Date.parse("2026-03-28T23:00:00Z"));
    assert.equal(dayStart("2026-03-30", cet), Date.parse("2026-03-29T22:00:00Z"));
  });
});
