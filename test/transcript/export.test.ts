// `sessiontap export` checked against the records: a real mirror (the interactive Claude Code capture
// replayed through a tap: a tool call, /compact, a rewind) exported as jsonl, html and md; every message
// present once, in order; nothing from a record reaches the HTML unescaped. Runs under Bun and Deno.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { blocksOf, hasControl, isConversation, messageOf } from "../../src/transcript/records.ts";
import { renderHtmlDocument, renderMarkdown } from "../../src/transcript/render.ts";
import { summarize } from "../../src/transcript/summary.ts";
import { buildTree, flatten, outline } from "../../src/transcript/tree.ts";
import type { StubUpstream } from "../support/stub-upstream.ts";
import { readTree, type TestTap, withTap } from "../support/tap.ts";
import { cli, rec, replayCapture, scratchDir } from "../support/recover.ts";
import type { Rec } from "../support/claude.ts";
import { parseJsonl } from "../../src/protocol/json.ts";

/** A string the Markdown must contain for this record, unique to it (null when the record has none). */
function signature(r: Rec): string | null {
  const blocks = blocksOf(messageOf(r)?.content);
  const toolUse = blocks.find((b) => b.type === "tool_use");
  if (toolUse) return `**Tool call** \`${String(toolUse.name)}\` (\`${String(toolUse.id)}\`)`;
  const result = blocks.find((b) => b.type === "tool_result");
  if (result) return `**Tool result** (\`${String(result.tool_use_id)}\`)`;
  const texts = blocks.filter((b) => b.type === "text" && !String(b.text).startsWith("<")).map((b) => String(b.text));
  return texts.at(-1) ?? null;
}

/** Every index of `needle` in `hay`. */
function positions(hay: string, needle: string): number[] {
  const out: number[] = [];
  for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + 1)) out.push(at);
  return out;
}

describe("export of a real mirror (tool call, compaction, rewind)", { timeout: 60_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let session = "";
  let records: Rec[] = [];
  const scratch = scratchDir();
  const run = (...args: string[]) => cli(["export", session.slice(0, 8), "--mirror-dir", tap.root, ...args], {}, { cwd: scratch.dir });

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    session = await replayCapture(tap, stub);
    records = [...readTree(tap.root).entries()].filter(([p]) => p.startsWith(`${session}/`) && p.split("/").length === 2).flatMap(([, r]) => r) as Rec[];
    assert.ok(records.some((r) => r.subtype === "compact_boundary"), "the mirror holds a compaction");
  });
  after(async () => {
    scratch.cleanup();
  });

  it("jsonl: the raw records of the main conversation, in file order, each once", async () => {
    const out = await run("--format", "jsonl");
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(parseJsonl(out.stdout).records, records);
  });

  it("html: one element per record, every record once, in the outline's order, the fork and the compaction marked", async () => {
    const out = await run("--format", "html");
    assert.equal(out.code, 0, out.stderr);
    const shown = [...out.stdout.matchAll(/ data-uuid="([^"]+)"/g)].map((m) => m[1]);
    const expected = flatten(outline(buildTree(records))).map((r) => r.uuid);
    assert.deepEqual(shown, expected);
    assert.deepEqual(new Set(shown), new Set(records.map((r) => r.uuid)), "every record of the mirror is shown");
    assert.equal(shown.length, records.length, "none twice");
    assert.equal(positions(out.stdout, 'class="branches"').length, 1, "the rewind's other branch");
    assert.equal(positions(out.stdout, 'class="compaction"').length, 1);
    assert.ok(out.stdout.includes('class="tool-use"') && out.stdout.includes("hi-from-tool"));
    assert.ok(!out.stdout.includes("<script"), "no script in an export");
  });

  it("md: every message once, in reading order", async () => {
    const out = await run("--format", "md");
    assert.equal(out.code, 0, out.stderr);
    const order = flatten(outline(buildTree(records))).filter(isConversation);
    const sigs = order.map(signature);
    const unique = sigs.filter((s): s is string => s !== null && sigs.filter((x) => x === s).length === 1);
    assert.ok(unique.length >= 8, `enough distinct messages to check (${unique.length})`);
    let last = -1;
    const body = out.stdout.slice(out.stdout.indexOf("\n---\n")); // after the header, which names the title
    assert.match(out.stdout, /^- Title: hello interactive world$/m, "the first prompt stands in for a title Claude Code never made");
    for (const s of unique) {
      const at = positions(body, s);
      assert.equal(at.length, 1, `"${s.slice(0, 60)}" appears once`);
      assert.ok(at[0] > last, `"${s.slice(0, 60)}" in order`);
      last = at[0];
    }
    assert.equal(positions(out.stdout, "**Conversation compacted").length, 1);
    assert.match(out.stdout, /^### Assistant \(claude-sonnet-4-5\) · \S+ · 100 in · 10 out · 50 cache read · ≈ \$0\.0004\d$/m, "each answer's tokens and cost");
    assert.match(out.stdout, /^- Tokens: \d+ \(\d+ input, \d+ output, 0 cache write, \d+ cache read\); estimated cost \$0\.\d+$/m);
    assert.ok(!hasControl(out.stdout), "the ESC of /compact's output does not leak");
    assert.ok(out.stdout.includes("Compacted (ctrl+o to see full summary)"));
    assert.equal(positions(out.stdout, "**Other branch**").length, 1);
  });

  it("--out writes the file 0600, replacing an older export; a directory is refused", async () => {
    const path = `${scratch.dir}/out.md`;
    assert.equal((await run("--out", "out.md")).code, 0, "relative to the working directory");
    const first = readFileSync(path, "utf8");
    assert.ok(first.startsWith(`# Claude Code session ${session}`));
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal((await run("--out", path, "--format", "jsonl")).code, 0);
    assert.notEqual(readFileSync(path, "utf8"), first);
    const dir = await run("--out", scratch.dir);
    assert.equal(dir.code, 1);
    assert.match(dir.stderr, /not a regular file/);
  });
});

describe("rendering escapes what a record holds", () => {
  const hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&";
  const records = [
    rec("user", "u1", null, hostile),
    rec("assistant", "a1", "u1", [
      { type: "thinking", thinking: hostile },
      { type: "tool_use", id: "t</code>1", name: "<b>Bash</b>", input: { command: hostile } },
      { type: "text", text: "```\nfenced\n```" },
      { type: "mystery_block", payload: hostile },
    ]),
    rec("user", "u2", "a1", [{
      type: "tool_result",
      tool_use_id: "t1",
      is_error: true,
      content: [{ type: "text", text: hostile }, { type: "text", text: "```\nfenced\n```" }, {
        type: "image",
        source: { type: "reference", sha256: "f".repeat(64), media_type: "image/png" },
      }],
    }]),
  ];
  const tree = buildTree(records);
  const summary = summarize({ dir: "d", records, malformed: 0, files: 1, bytes: 1, agents: [], side: [] }, tree);

  it("html: no tag from a record survives; thinking and unknown blocks are folded; the image is a note", () => {
    const html = renderHtmlDocument(summary, outline(tree));
    assert.ok(!/<script|<img|<b>Bash/.test(html), "a record's markup is text");
    assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert.match(html, /<details class="thinking"><summary>Thinking<\/summary>/);
    assert.match(html, /<summary>mystery_block block<\/summary>/);
    assert.ok(html.includes(`[image: image/png, sha256 ${"f".repeat(64)}]`));
    assert.match(html, /class="tool-result error"/);
  });

  it("md: a fence longer than any backtick run inside, thinking labelled, no HTML of its own where nothing is folded", () => {
    const md = renderMarkdown(summary, outline(tree));
    assert.ok(md.includes("````\n```\nfenced\n```\n````\n"), md);
    assert.match(md, /^\*\*Thinking\*\*\n\n```\n<script>/m);
    assert.ok(md.includes("**Tool result** (`t1`) — error"));
    assert.doesNotMatch(md, /<\/?(details|summary)>/);
  });

  it("md: Claude Code's environment block and injected context folded, as the HTML export folds them; the summary escaped", () => {
    const environment = `You are Claude Code.\n# Environment\nPrimary working directory: /home/<x>/shop\n${"Platform: linux\n".repeat(600).trimEnd()}`;
    const reminder = "<system-reminder>\nAs you answer, use the context below.\n</system-reminder>";
    const folding = [
      rec("system", "s1", null, [{ type: "text", text: environment }]),
      rec("user", "u1", "s1", [{ type: "text", text: reminder }, { type: "text", text: "fix the test" }]),
      rec("assistant", "a1", "u1", [{ type: "text", text: "Done." }]),
    ];
    const t = buildTree(folding);
    const md = renderMarkdown(summarize({ dir: "d", records: folding, malformed: 0, files: 1, bytes: 1, agents: [], side: [] }, t), outline(t));
    const folds = [...md.matchAll(/<details><summary>⚙ ([^\n]*)<\/summary>\n\n(`{3,})\n([\s\S]*?)\n\2\n\n<\/details>\n/g)];
    assert.equal(folds.length, 2, md.slice(0, 2000));
    assert.match(folds[0][1], /^System context · \S+ · environment from Claude Code \(\d+(\.\d)? KB; cwd \/home\/&lt;x&gt;\/shop\)$/);
    assert.ok(folds[0][3] === environment, "the whole block is inside the fold");
    assert.match(folds[1][1], /^Added by Claude Code: /);
    assert.equal(folds[1][3], reminder);
    assert.equal(md.match(/<details>/g)!.length, 2, "nothing else is folded");
    assert.ok(md.includes("fix the test\n"));
  });
});
