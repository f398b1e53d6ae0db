// A conversation as Markdown (`export --format md`), and the export formats: every record of the outline once, in its order; Claude Code's
// context folded as the HTML export folds it (a `<details>`, the only HTML of its own); no terminal control characters. Pure.
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";
import { answerLine, totalTokens, usd } from "../usage/tokens.ts";
import { compactJson, jsonText } from "./json-text.ts";
import {
  attachmentNote,
  type Block,
  blocksOf,
  compactionText,
  environmentSummary,
  injectedSummary,
  isApiSystem,
  isCompactBoundary,
  isInjectedText,
  messageOf,
  type Rec,
  recordFlags,
  scrubControl,
  scrubLine,
  terminalSafeJson,
} from "./records.ts";
import { renderHtmlDocument } from "./render-html.ts";
import { countsText, type SessionData, type SessionSummary, summarize } from "./summary.ts";
import { buildTree, type Item, outline, renderOutline, type Tree } from "./tree.ts";
import type { Redactor } from "../protocol/secrets.ts";
import { plural } from "../utils/plural.ts";

export type ExportFormat = "md" | "html" | "jsonl";

/** `jsonl`: the main conversation's records in file order (escaped, not changed: nothing raw a terminal acts on); md/html: for people, in reading order. */
export function exportText(session: { records: Rec[]; tree: Tree; summary: SessionSummary }, format: ExportFormat, prices?: PriceTable): string {
  if (format === "jsonl") return session.records.map((r) => terminalSafeJson(compactJson(r)) + "\n").join("");
  const items = outline(session.tree);
  return format === "html" ? renderHtmlDocument(session.summary, items, prices) : renderMarkdown(session.summary, items, prices);
}

/** A session as `export` and the viewer write it; with a redactor, each secret of its records (side requests' too: the title) replaced first. */
export async function exportSession(data: SessionData, format: ExportFormat, prices: PriceTable, redactor: Redactor | null): Promise<string> {
  if (redactor !== null) {
    const all = await redactor.redact([...data.records, ...data.side]);
    data = { ...data, records: all.slice(0, data.records.length), side: all.slice(data.records.length) };
  }
  const tree = buildTree(data.records);
  return exportText({ records: data.records, tree, summary: summarize(data, tree, prices) }, format, prices);
}

export function renderMarkdown(summary: SessionSummary, items: Item[], prices: PriceTable = BUILTIN_PRICES): string {
  const lines = [
    `# Claude Code session ${scrubLine(summary.sessionId ?? summary.dir)}`,
    "",
    `- Title: ${summary.title === null ? "(none)" : scrubControl(summary.title)}`,
    `- Working directory: ${summary.cwd === null ? "unknown" : code(scrubLine(summary.cwd))}`,
    `- Time: ${summary.firstTimestamp ?? "?"} – ${summary.lastTimestamp ?? "?"}`,
    `- Conversation: ${countsText(summary.counts)}`,
    `- Branches: ${plural(summary.leaves, "leaf", "leaves")}; compactions: ${summary.compactions}`,
    `- Tokens: ${
      totalTokens(summary.usage)
    } (${summary.usage.inputTokens} input, ${summary.usage.outputTokens} output, ${summary.usage.cacheCreationTokens} cache write, ${summary.usage.cacheReadTokens} cache read); estimated cost ${
      summary.costUSD === null ? "unknown (a model is not in the price table)" : usd(summary.costUSD)
    }`,
    "",
    "---",
    "",
  ];
  return lines.join("\n") + renderItems(items, prices);
}

export function renderItems(items: Item[], prices: PriceTable = BUILTIN_PRICES): string {
  return renderOutline(items, {
    record: (record, continued) => renderRecord(record, continued, prices),
    compaction: compactionLine,
    branches: (item) =>
      item.branches.map((branch) => {
        const where = item.at === null ? "a separate conversation in this session" : "forks after the message above; not the current branch";
        const body = `**Other branch** (${where})\n\n${renderItems(branch, prices)}`;
        return body.trimEnd().split("\n").map((l) => (l === "" ? ">" : `> ${l}`)).join("\n") + "\n";
      }),
  }).join("\n");
}

function compactionLine(r: Rec): string {
  return `---\n\n**${compactionText(r)}**${isCompactBoundary(r) ? "" : " — the summary below starts the compacted conversation"}\n\n---\n`;
}

function renderRecord(r: Rec, isContinuation: boolean, prices: PriceTable): string {
  const message = messageOf(r);
  const time = typeof r.timestamp === "string" ? scrubControl(r.timestamp) : "";
  const flags = recordFlags(r)
    .filter(Boolean)
    .join(", ");
  if (isApiSystem(r)) {
    const text = blocksOf(message?.content).map((b) => String(b.text ?? compactJson(b))).join("\n");
    return folded(`System context · ${time} · ${environmentSummary(text)}`, fence(text));
  }
  if (r.type !== "user" && r.type !== "assistant") {
    return `*${scrubControl(String(r.type))}${r.subtype ? `/${scrubControl(String(r.subtype))}` : ""} record · ${scrubControl(time)}*\n`;
  }
  const who = r.type === "user" ? "User" : `Assistant${typeof message?.model === "string" ? ` (${scrubControl(message.model)})` : ""}`;
  const answer = r.type === "assistant" ? answerLine(r, prices) : null;
  const usage = answer === null ? "" : ` · ${answer}`;
  const head = isContinuation ? "" : `### ${who} · ${time}${usage}${flags ? ` · _${flags}_` : ""}\n\n`;
  return head + blocksOf(message?.content).map(renderBlock).join("\n") + "\n";
}

function renderBlock(b: Block): string {
  switch (b.type) {
    case "text":
      if (isInjectedText(String(b.text ?? ""))) return folded(`Added by Claude Code: ${injectedSummary(String(b.text))}`, fence(String(b.text)));
      return `${scrubControl(String(b.text ?? ""))}\n`;
    case "thinking":
      return labelled("Thinking", fence(String(b.thinking ?? "")));
    case "redacted_thinking":
      return "_(redacted thinking)_\n";
    case "tool_use":
    case "server_tool_use":
    case "mcp_tool_use":
      return `**Tool call** ${code(String(b.name ?? "?"))} (${code(String(b.id ?? ""))})\n\n${fence(jsonText(b.input ?? {}), "json")}\n`;
    case "tool_result": {
      const label = `**Tool result** (${code(String(b.tool_use_id ?? ""))})${b.is_error === true ? " — error" : ""}`;
      const parts = blocksOf(b.content).map((x) => (x.type === "text" ? fence(String(x.text ?? "")) : renderBlock(x)));
      return `${label}\n\n${parts.length > 0 ? parts.join("\n") : "_(empty)_\n"}`;
    }
    case "image":
    case "document":
      return `${attachmentNote(b)}\n`;
    default:
      return `_${String(b.type ?? "block")} block_\n\n${fence(jsonText(b), "json")}\n`;
  }
}

/** The longest run of backticks in `text` (counted in one pass: a text of a million runs is no array of a million matches). */
function longestBackticks(text: string): number {
  let longest = 0;
  for (let i = text.indexOf("`"); i >= 0; i = text.indexOf("`", i)) {
    let j = i;
    while (text.charCodeAt(j) === 96) j++;
    longest = Math.max(longest, j - i);
    i = j;
  }
  return longest;
}

/** A fenced block whose fence is longer than any backtick run inside. */
function fence(raw: string, lang = ""): string {
  const text = scrubControl(raw);
  const f = "`".repeat(Math.max(2, longestBackticks(text)) + 1);
  return `${f}${lang}\n${text}\n${f}\n`;
}

/** Inline code that survives backticks inside. */
function code(raw: string): string {
  const text = scrubControl(raw);
  const longest = longestBackticks(text);
  const f = "`".repeat(longest + 1);
  return longest > 0 ? `${f} ${text} ${f}` : `${f}${text}${f}`;
}

/** A block folded behind one line: `<details>`, the summary's text escaped (it quotes the block), the body as Markdown inside. */
function folded(summary: string, body: string): string {
  const text = scrubLine(summary).replace(/[&<>]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : "&gt;"));
  return `<details><summary>⚙ ${text}</summary>\n\n${body}\n</details>\n`;
}

function labelled(label: string, body: string): string {
  return `**${label}**\n\n${body}`;
}
