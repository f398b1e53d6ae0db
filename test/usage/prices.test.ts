// The price table: which model ids name a family, what an answer costs (5-minute and 1-hour cache writes,
// cache reads, the long-prompt rates), an unknown model costing null rather than a guess, and the override
// file read over the built-in table, each mistake in it one line naming it. Runs under Bun and Deno.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { BUILTIN_PRICES, costOf, loadPrices, modelFamily, parsePriceFile, PriceFileError, priceOf } from "../../src/usage/prices.ts";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { scratchDir } from "../support/recover.ts";
import { writeFileSync } from "node:fs";

const answer = (model: string | null, input: number, output: number, write = 0, read = 0, write1h = 0) => ({
  model,
  tokens: { inputTokens: input, outputTokens: output, cacheCreationTokens: write, cacheReadTokens: read },
  cacheWrite1hTokens: write1h,
});

describe("model families", () => {
  it("modelFamily() strips dates, providers, context tags and versions, and nothing else", () => {
    for (
      const [id, family] of [
        ["claude-sonnet-4-5-20250929", "claude-sonnet-4-5"],
        ["claude-opus-5-5", "claude-opus-5-5"],
        ["claude-opus-5-5[1m]", "claude-opus-5-5"],
        ["anthropic/claude-haiku-4-5", "claude-haiku-4-5"],
        ["us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"],
        ["claude-opus-4-5@20251101", "claude-opus-4-5"],
        ["Claude-3-5-Haiku-Latest", "claude-3-5-haiku"],
        ["claude-opus-4-20250514", "claude-opus-4"],
      ]
    ) assert.equal(modelFamily(id), family, id);
  });

  it("a model the table lacks has no price, even when its name starts like one it has", () => {
    assert.equal(priceOf(BUILTIN_PRICES, "claude-opus-4-9"), null);
    assert.equal(priceOf(BUILTIN_PRICES, "claude-sonnet-4-5-mini"), null);
    assert.equal(priceOf(BUILTIN_PRICES, "gpt-5"), null);
    assert.equal(priceOf(BUILTIN_PRICES, null), null);
    assert.equal(costOf(BUILTIN_PRICES, answer("claude-stub", 100, 10)), null);
    assert.match(BUILTIN_PRICES.checked, /^\d{4}-\d{2}-\d{2}$/, "the table says when it was checked");
  });
});

describe("costs", () => {
  const close = (a: number | null, b: number) => assert.ok(a !== null && Math.abs(a - b) < 1e-12, `${a} ≠ ${b}`);

  it("input, output, cache writes (five minutes and one hour) and cache reads at the family's rates", () => {
    // Sonnet 4.5: $3 in, $15 out, $3.75 5-minute write, $6 1-hour write, $0.30 read, per million (prompts up to 200k).
    close(costOf(BUILTIN_PRICES, answer("claude-sonnet-4-5-20250929", 100_000, 0)), 0.3);
    close(costOf(BUILTIN_PRICES, answer("claude-sonnet-4-5-20250929", 0, 1_000_000)), 15);
    close(costOf(BUILTIN_PRICES, answer("claude-sonnet-4-5-20250929", 0, 0, 100_000)), 0.375);
    close(costOf(BUILTIN_PRICES, answer("claude-sonnet-4-5-20250929", 0, 0, 100_000, 0, 40_000)), 0.06 * 3.75 + 0.04 * 6);
    close(costOf(BUILTIN_PRICES, answer("claude-sonnet-4-5-20250929", 0, 0, 0, 100_000)), 0.03);
    close(costOf(BUILTIN_PRICES, answer("claude-opus-5-5", 1_000_000, 1_000_000, 1_000_000, 1_000_000)), 4 + 20 + 5 + 0.2);
    // The real 1.0.98 transcript's first answer: 3 in, 322 out, 10816 written, 4734 read.
    close(costOf(BUILTIN_PRICES, answer("claude-sonnet-4-20250514", 3, 322, 10816, 4734)), (3 * 3 + 322 * 15 + 10816 * 3.75 + 4734 * 0.3) / 1e6);
  });

  it("a prompt past the family's long-prompt threshold prices the whole answer at the long rates", () => {
    close(costOf(BUILTIN_PRICES, answer("claude-sonnet-4-5", 100_000, 1000, 0, 100_000)), (100_000 * 3 + 1000 * 15 + 100_000 * 0.3) / 1e6);
    close(costOf(BUILTIN_PRICES, answer("claude-sonnet-4-5", 100_001, 1000, 0, 100_000)), (100_001 * 6 + 1000 * 22.5 + 100_000 * 0.6) / 1e6);
    close(costOf(BUILTIN_PRICES, answer("claude-sonnet-4-6", 300_000, 0)), 0.9); // no long-prompt rates for 4.6
  });
});

describe("the price file (SESSIONTAP_PRICES)", () => {
  it("adds and replaces families over the built-in table; cache rates default from the input rate", () => {
    const table = parsePriceFile(
      JSON.stringify({
        checked: "2027-01-01",
        models: { "claude-stub-1": { input: 2, output: 8 }, "claude-opus-5-5-20261101": { input: 1, output: 2, cacheRead: 0 } },
      }),
      "/x.json",
    );
    assert.equal(table.checked, "2027-01-01");
    assert.match(table.source, /^\/x\.json over the built-in table/);
    assert.deepEqual(table.models["claude-stub-1"], { input: 2, output: 8, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 });
    assert.equal(table.models["claude-opus-5-5"].cacheRead, 0, "an id names its family; an explicit 0 stays 0");
    assert.deepEqual(table.models["claude-haiku-4-5"], BUILTIN_PRICES.models["claude-haiku-4-5"], "the rest is kept");
    assert.equal(BUILTIN_PRICES.models["claude-stub-1"], undefined, "the built-in table is not changed");
  });

  it("each mistake is one line naming it", () => {
    for (
      const [text, pattern] of [
        ["{", /^is not JSON/],
        ["[]", /must be a JSON object/],
        [`{"models": {}, "extra": 1}`, /unknown key "extra"/],
        [`{"checked": "yesterday", "models": {}}`, /"checked" must be a date/],
        [`{"models": []}`, /"models" must be an object/],
        [`{"models": {"m": {"input": 1}}}`, /"m" needs at least "input" and "output"/],
        [`{"models": {"m": {"input": -1, "output": 1}}}`, /"m".input must be a number/],
        [`{"models": {"m": {"input": 1, "output": 1, "cachewrite": 1}}}`, /"m" has an unknown rate "cachewrite"/],
      ] as [string, RegExp][]
    ) {
      assert.throws(() => parsePriceFile(text, "f"), (e: Error) => e instanceof PriceFileError && pattern.test(e.message) && !e.message.includes("\n"), text);
    }
  });

  it("loadPrices() names the file and the setting when it cannot be read or used", async () => {
    const s = scratchDir();
    try {
      assert.equal(await loadPrices(nodeFs, null), BUILTIN_PRICES);
      await assert.rejects(loadPrices(nodeFs, `${s.dir}/none.json`), /^PriceFileError: cannot read the price file .*none\.json \(SESSIONTAP_PRICES\): ENOENT/);
      writeFileSync(`${s.dir}/bad.json`, `{"models": {"m": {"input": "3"}}}`);
      await assert.rejects(loadPrices(nodeFs, `${s.dir}/bad.json`), /the price file .*bad\.json \(SESSIONTAP_PRICES\) "m".input must be a number/);
    } finally {
      s.cleanup();
    }
  });
});
