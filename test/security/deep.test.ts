// Deep nesting (docs/RELIABILITY.md "Trust boundaries", hole 5): a tool input nested 20,000 levels deep, mirrored as a 120 KB
// record, made the viewer answer 500 (out of memory at 3 GB) and export take seconds at 4.5 GB, because
// indenting JSON costs the square of its depth; a tree of 20,000 nested forks overflowed the stack.
// Rendering, export and show now stay within a small factor of the record's size at any depth. In-process
// here (Bun and Deno); the memory of a real process is measured in processes.test.ts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { exportSession } from "../../src/transcript/render.ts";
import { compactJson, jsonText } from "../../src/transcript/records.ts";
import { searchableText } from "../../src/transcript/records.ts";
import { buildTree, flatten, type Item, MAX_NESTING, outline } from "../../src/transcript/tree.ts";
import { deepSession, deepValue } from "../support/deep.ts";
import { cli, rec, scratchDir, writeMirror } from "../support/recover.ts";
import type { Rec } from "../support/claude.ts";

/** How deeply `items` nest branches. */
function nesting(items: Item[]): number {
  let deepest = 0;
  for (const item of items) if (item.kind === "branches") { for (const b of item.branches) deepest = Math.max(deepest, 1 + nesting(b)); }
  return deepest;
}

describe("JSON text at any depth", () => {
  it("is JSON.stringify's text for ordinary values (indented, and compact at level 0)", () => {
    const samples: unknown[] = [
      { command: "ls -la", nested: { list: [1, "two", null, true, { x: [] }], empty: {} }, unicode: "é\u0000\ud800", n: -1.5e-7 },
      [],
      {},
      "text",
      42,
      null,
      [[[["deep-ish"]]]],
      { skip: undefined, keep: 1, f: () => 1 },
      [undefined, 1],
    ];
    for (const value of samples) {
      assert.equal(jsonText(value), JSON.stringify(value, null, 2));
      assert.equal(jsonText(value, 0), JSON.stringify(value));
      assert.equal(compactJson(value), JSON.stringify(value));
    }
  });

  it("never overflows, and indents only the first levels, so 20,000 levels stay a few times the compact size", () => {
    const value = deepValue(20_000);
    const compact = '{"a":'.repeat(20_000) + "1" + "}".repeat(20_000);
    const text = jsonText(value);
    assert.ok(text.length < 2 * compact.length, `${text.length} characters for ${compact.length} compact`);
    assert.equal(compactJson(JSON.parse(text)), compact, "the same value (compared as text: assert.deepEqual itself recurses)");
    const array = JSON.parse("[".repeat(100_000) + "]".repeat(100_000));
    assert.equal(compactJson(array), "[".repeat(100_000) + "]".repeat(100_000), "deeper than JSON.stringify itself can go on Bun");
  });
});

describe("rendering a hostile record", () => {
  const records = deepSession("deep-session", 20_000);
  const size = records.reduce((n, r) => n + JSON.stringify(r).length, 0);
  const data = { dir: "deep-session", records, malformed: 0, files: 1, bytes: size, agents: [], side: [] };

  for (const format of ["md", "html", "jsonl"] as const) {
    it(`export --format ${format} of a 20,000-level tool input stays within a few times the record`, async () => {
      const text = await exportSession(data, format);
      assert.ok(text.length < 4 * size, `${format}: ${text.length} characters for ${size} of records`);
      if (format === "jsonl") assert.equal(text, records.map((r) => compactJson(r) + "\n").join(""), "the records, whole");
      else assert.ok(text.includes("toolu_deep"));
    });
  }

  it("search reads it", () => {
    assert.ok(searchableText(records[1]).length > 100_000);
  });

  it("20,000 nested forks: the outline keeps every record once and nests at most MAX_NESTING deep", async () => {
    const forked: Rec[] = [];
    for (let i = 0; i < 20_000; i++) {
      forked.push(rec("user", `x${i}`, i === 0 ? null : `x${i - 1}`, "on", { timestamp: new Date(Date.UTC(2026, 0, 1) + i).toISOString() }));
      forked.push(rec("assistant", `y${i}`, `x${i}`, [{ type: "text", text: "off" }], { timestamp: new Date(Date.UTC(2026, 0, 2) - i).toISOString() }));
    }
    const items = outline(buildTree(forked));
    assert.equal(flatten(items).length, forked.length);
    assert.equal(new Set(flatten(items).map((r) => r.uuid)).size, forked.length);
    assert.ok(nesting(items) <= MAX_NESTING, `nested ${nesting(items)} deep`);
    const html = await exportSession({ dir: "f", records: forked, malformed: 0, files: 1, bytes: 0, agents: [], side: [] }, "html");
    assert.ok(html.length < 20_000_000, "and renders (what the viewer does)");
  });
});

describe("the CLI on a hostile record", () => {
  const scratch = scratchDir("sessiontap-deep-");
  const root = `${scratch.dir}/mirror`;
  before(() => {
    mkdirSync(root, { mode: 0o700 });
    writeMirror(root, "deep-session", deepSession("deep-session", 20_000));
  });
  after(() => scratch.cleanup());

  it("show, show --json, export and scan answer in full", async () => {
    for (const args of [["show"], ["show", "--json"], ["export", "--format", "html"], ["export", "--format", "md"], ["scan"]]) {
      const r = await cli([args[0], "deep-session", ...args.slice(1), "--mirror-dir", root], { CLAUDE_CONFIG_DIR: `${scratch.dir}/claude` });
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
      assert.ok(r.stdout.length < 2_000_000, `${args.join(" ")}: ${r.stdout.length} characters`);
    }
    const shown = JSON.parse((await cli(["show", "deep-session", "--json", "--mirror-dir", root], { CLAUDE_CONFIG_DIR: `${scratch.dir}/claude` })).stdout);
    assert.equal(compactJson(shown.conversation[1].message.content[0].input), compactJson(deepValue(20_000)), "show --json keeps the record whole");
  });
});
