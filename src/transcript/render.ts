// A conversation for people: one walk of the outline and three formats of a record, HTML (the viewer, `export --format html`),
// Markdown (`export`) and text (`show`), control characters scrubbed, context folded (docs/DESIGN.md "The viewer"). Pure.
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";
import { answerLine, totalTokens, usd } from "../usage/tokens.ts";
import { localDateTime, type Zone } from "../utils/local-time.ts";
import { plural } from "../utils/describe-error.ts";
import {
  attachmentNote,
  type Block,
  blocksOf,
  compactionText,
  compactJson,
  continuesMessage,
  environmentSummary,
  injectedParts,
  injectedSummary,
  isApiSystem,
  isCompactBoundary,
  isCompactSummary,
  isInjectedText,
  isToolResultOnly,
  jsonText,
  messageOf,
  oneLine,
  type Rec,
  recordFlags,
  scrubControl,
  scrubLine,
  terminalSafeJson,
  timeOf,
  toolLine,
  uuidOf,
} from "./records.ts";
import { countsText, type SessionData, type SessionSummary, summarize } from "./summary.ts";
import { buildTree, flatten, type Item, outline } from "./tree.ts";
import type { Redactor } from "../protocol/secrets.ts";

interface Format {
  record(record: Rec, continued: boolean): string | null;
  compaction(record: Rec): string;
  branches(item: Extract<Item, { kind: "branches" }>): string[];
}

function walk(items: Item[], format: Format): string[] {
  const out: string[] = [];
  let previous: Rec | null = null;
  for (const item of items) {
    if (item.kind === "record") {
      const text = format.record(item.record, continuesMessage(previous, item.record));
      if (text !== null) out.push(text);
      previous = item.record;
    } else {
      out.push(...(item.kind === "compaction" ? [format.compaction(item.record)] : format.branches(item)));
      previous = null;
    }
  }
  return out;
}

/** Each tool result shown beneath its call: `take` gives a call its result, `taken` tells a result already shown there. */
type Pairs = { take(call: Block): Block | undefined; taken(result: Block): boolean };

function pairs(items: Item[]): Pairs {
  const results = new Map<string, Block>();
  for (const r of flatten(items)) {
    for (const b of blocksOf(messageOf(r)?.content)) if (b.type === "tool_result" && typeof b.tool_use_id === "string") results.set(b.tool_use_id, b);
  }
  const taken = new Set<string>();
  return {
    take: (call) => {
      const found = typeof call.id === "string" ? results.get(call.id) : undefined;
      if (found !== undefined) taken.add(call.id as string);
      return found;
    },
    taken: (b) => typeof b.tool_use_id === "string" && taken.has(b.tool_use_id),
  };
}

type Kind = "text" | "injected" | "thinking" | "redacted" | "call" | "result" | "attachment" | "other";
const KINDS: Record<string, Kind> = {
  thinking: "thinking",
  redacted_thinking: "redacted",
  tool_use: "call",
  server_tool_use: "call",
  mcp_tool_use: "call",
  tool_result: "result",
  image: "attachment",
  document: "attachment",
};

const kindOf = (b: Block): Kind =>
  b.type === "text" ? (isInjectedText(String(b.text ?? "")) ? "injected" : "text") : (Object.hasOwn(KINDS, String(b.type)) ? KINDS[String(b.type)] : "other");

const systemText = (r: Rec) => blocksOf(messageOf(r)?.content).map((b) => (typeof b.text === "string" ? b.text : compactJson(b))).join("\n");
const otherType = (r: Rec) => `${String(r.type)}${r.subtype ? `/${String(r.subtype)}` : ""}`;
const where = (at: string | null) => at === null ? "a separate conversation in this session" : "forks after the message above; not the current branch";
const lineCount = (text: string) => text.split("\n").length;

function escapeHtml(text: string): string {
  return scrubControl(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

function facts(s: SessionSummary, path: (cwd: string) => string): [string, string][] {
  const u = s.usage;
  const cost = s.costUSD === null ? "unknown (a model is not in the price table)" : usd(s.costUSD);
  const tokens = `${u.inputTokens} input, ${u.outputTokens} output, ${u.cacheCreationTokens} cache write, ${u.cacheReadTokens} cache read`;
  return [
    ["Title", s.title ?? "(none)"],
    ["Working directory", s.cwd === null ? "unknown" : path(s.cwd)],
    ["Time", `${s.firstTimestamp ?? "?"} – ${s.lastTimestamp ?? "?"} (UTC)`],
    ["Conversation", countsText(s.counts)],
    ["Branches", `${plural(s.leaves, "leaf", "leaves")}; compactions: ${s.compactions}`],
    ["Tokens", `${totalTokens(u)} (${tokens}); estimated cost ${cost}`],
  ];
}

export const CONVERSATION_CSS = `
.conv{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330}
.rec{border:1px solid #d8dde6;border-radius:8px;margin:10px 0;padding:8px 12px;background:#fff;min-width:0;overflow-wrap:anywhere}
.rec.user{background:#f3f7ff;border-color:#c9d8f5}.rec.tool-results{background:#f7f7f4;border-color:#dcdcd2}
.rec.system{background:#fafafa;color:#555;padding:4px 12px}.rec.continued{margin-top:-6px;border-top-style:dashed}
.rec.fresh{outline:2px solid #2f9e44;transition:outline-color 2s}.rec[hidden]{display:none}
.rec header{font-size:12px;color:#5b6475;margin-bottom:4px;display:flex;gap:4px 8px;flex-wrap:wrap;align-items:baseline}
.rec header .role{font-weight:600;color:#1d2330}.rec header .usage{color:#868e96}.flag{background:#fff3bf;border-radius:4px;padding:0 4px}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f1f3f5;border-radius:6px;padding:6px 8px;margin:4px 0;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;max-width:100%}
.tool-use{border-left:3px solid #7048e8;padding-left:8px;margin:6px 0}
.tool-use>summary{font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,monospace;color:#1d2330;overflow-wrap:anywhere}
.tool-use .tool-name{font-weight:600;color:#5f3dc4}.tool-use .tool-state{color:#868e96;font-family:system-ui,sans-serif}
.tool-use.error{border-left-color:#e03131}.tool-result{border-left:3px solid #868e96;padding-left:8px;margin:6px 0}
.tool-result.error{border-left-color:#e03131}.tool-use .tool-result{border-left:0;padding-left:0}.tool-label{font-size:12px;color:#5b6475}
.attachment{font-style:italic;color:#5b6475}details>summary{cursor:pointer;color:#5b6475}.injected>summary,.env>summary{font-size:12px;overflow-wrap:anywhere}
mark{background:#ffe066;color:inherit;border-radius:2px}
.compaction{text-align:center;color:#9c36b5;border-top:2px dashed #cc5de8;margin:18px 0;padding-top:4px;font-weight:600}
.branches{border-left:3px dotted #f08c00;margin:8px 0 8px 12px;padding-left:10px}.branches>summary{color:#d9480f}.branch{opacity:.85}
`;

type HtmlOptions = { continued?: boolean; pairs?: Pairs; prices?: PriceTable };

function timeHtml(iso: string): string {
  const utc = iso.replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, " UTC");
  return `<time datetime="${escapeHtml(iso)}" title="${escapeHtml(utc)}">${escapeHtml(utc)}</time>`;
}

export function renderRecordHtml(r: Rec, options: HtmlOptions = {}): string {
  const message = messageOf(r);
  const id = escapeHtml(uuidOf(r) ?? "");
  const blocks = blocksOf(message?.content);
  const system = isApiSystem(r);
  const results = r.type === "user" && isToolResultOnly(r);
  const kind = system ? "system" : r.type === "user" ? (results ? "user tool-results" : "user") : r.type === "assistant" ? "assistant" : "system";
  const role = system ? "Context" : r.type === "user" ? (results ? "Tool result" : "User") : r.type === "assistant" ? "Assistant" : otherType(r);
  const answer = r.type === "assistant" ? answerLine(r, options.prices ?? BUILTIN_PRICES) : null;
  const head = [
    `<span class="role">${escapeHtml(role)}</span>`,
    typeof message?.model === "string" ? `<span class="model">${escapeHtml(message.model)}</span>` : "",
    timeHtml(typeof r.timestamp === "string" ? r.timestamp : ""),
    answer === null ? "" : `<span class="usage">${escapeHtml(answer)}</span>`,
    ...recordFlags(r, true).map((f) => `<span class="flag">${escapeHtml(f)}</span>`),
  ].join("");
  const conversation = r.type === "user" || r.type === "assistant";
  const shown = blocks.filter((b) => !(b.type === "tool_result" && options.pairs?.taken(b)));
  const empty = conversation && shown.length === 0 && blocks.length > 0;
  const body = system
    ? `<details class="env"><summary>${escapeHtml(environmentSummary(systemText(r)))}</summary><pre>${escapeHtml(systemText(r))}</pre></details>`
    : conversation
    ? shown.map((b) => blockHtml(b, options)).join("")
    : `<pre>${escapeHtml(jsonText(r))}</pre>`;
  // A record whose every block is shown inside its call's pair stays in the page (links, live updates find it) but hidden.
  const resultIds = blocks.filter((b) => b.type === "tool_result" && typeof b.tool_use_id === "string").map((b) => b.tool_use_id as string);
  const parent = escapeHtml(typeof r.parentUuid === "string" ? r.parentUuid : "");
  const attrs = `class="rec ${kind}${options.continued ? " continued" : ""}${empty ? " paired" : ""}" id="r-${id}" data-uuid="${id}" data-parent="${parent}"` +
    (resultIds.length > 0 ? ` data-tool-results="${escapeHtml(resultIds.join(" "))}"` : "") + (empty ? " hidden" : "");
  return `<article ${attrs}>${options.continued ? "" : `<header>${head}</header>`}${body}</article>`;
}

/** A tool result; `labelled`: shown apart from its call. */
function resultHtml(b: Block, options: HtmlOptions, labelled = false): string {
  const [id, error] = [escapeHtml(String(b.tool_use_id ?? "")), b.is_error === true];
  const label = labelled ? `<div class="tool-label">Tool result <code>${id}</code>${error ? " (error)" : ""}</div>` : "";
  const inner = blocksOf(b.content).map((x) => (x.type === "text" ? `<pre>${escapeHtml(String(x.text ?? ""))}</pre>` : blockHtml(x, options))).join("");
  return `<div class="tool-result${error ? " error" : ""}" data-tool-use-id="${id}">${label}${inner || '<div class="attachment">(no output)</div>'}</div>`;
}

function toolPairHtml(b: Block, options: HtmlOptions): string {
  const id = escapeHtml(String(b.id ?? ""));
  const input = jsonText(b.input ?? {});
  const result = options.pairs?.take(b);
  const resultText = result === undefined ? "" : blocksOf(result.content).map((x) => String(x.text ?? "")).join("\n");
  const error = result?.is_error === true ? " error" : "";
  const lines = lineCount(input) + (result === undefined ? 0 : lineCount(resultText));
  const state = result === undefined ? "" : error ? "error" : `${plural(lineCount(resultText.replace(/\n+$/, "")), "line")}`;
  const line = toolLine(b.name, b.input);
  const name = line.split(":")[0];
  const summary = `<span class="tool-name">${escapeHtml(name)}</span><span class="tool-what">${escapeHtml(line.slice(name.length))}</span> ` +
    `<span class="tool-state">${escapeHtml(state)}</span>`;
  return `<details class="tool-use${error}" data-tool-use-id="${id}"${lines <= 8 ? " open" : ""}><summary>${summary}</summary>` +
    `<pre class="tool-input">${escapeHtml(input)}</pre><div class="tool-out">${result === undefined ? "" : resultHtml(result, options)}</div></details>`;
}

const HTML_BLOCKS: Record<Kind, (b: Block, options: HtmlOptions) => string> = {
  injected: (b) =>
    `<details class="injected"><summary>${escapeHtml(`⚙ ${injectedSummary(String(b.text))}`)}</summary><pre>${escapeHtml(String(b.text))}</pre></details>`,
  text: (b) => `<div class="text">${escapeHtml(String(b.text ?? ""))}</div>`,
  thinking: (b) => `<details class="thinking"><summary>Thinking</summary><div class="text">${escapeHtml(String(b.thinking ?? ""))}</div></details>`,
  redacted: () => `<div class="attachment">(redacted thinking)</div>`,
  call: toolPairHtml,
  result: (b, options) => resultHtml(b, options, true),
  attachment: (b) => `<div class="attachment">${escapeHtml(attachmentNote(b))}</div>`,
  other: (b) => `<details><summary>${escapeHtml(String(b.type ?? "unknown"))} block</summary><pre>${escapeHtml(jsonText(b))}</pre></details>`,
};

const blockHtml = (b: Block, options: HtmlOptions) => HTML_BLOCKS[kindOf(b)](b, options);

export function renderItemsHtml(items: Item[], prices: PriceTable = BUILTIN_PRICES): string {
  const options = { pairs: pairs(items), prices };
  const all = (list: Item[]): string =>
    walk(list, {
      record: (record, continued) => renderRecordHtml(record, { ...options, continued }),
      compaction: (r) => {
        const id = isCompactBoundary(r) ? ` id="r-${escapeHtml(uuidOf(r) ?? "")}" data-uuid="${escapeHtml(uuidOf(r) ?? "")}"` : "";
        return `<div class="compaction"${id}>${escapeHtml(compactionText(r))}</div>`;
      },
      branches: (item) => {
        const n = item.branches.length;
        const label = item.at === null
          ? `${plural(n, "separate conversation")} in this session`
          : `${n} other branch${n === 1 ? "" : "es"} fork${n === 1 ? "s" : ""} here (rewound or retried; not the current branch)`;
        const inner = item.branches.map((b) => `<div class="branch">${all(b)}</div>`).join("");
        return [`<details class="branches" data-at="${escapeHtml(item.at ?? "")}"><summary>${escapeHtml(label)}</summary>${inner}</details>`];
      },
    }).join("\n");
  return all(items);
}

export function renderHtmlDocument(summary: SessionSummary, items: Item[], prices: PriceTable = BUILTIN_PRICES): string {
  const id = summary.sessionId ?? summary.dir;
  const title = summary.title ?? `Claude Code session ${id}`;
  const rows = [["Session", id], ...facts(summary, (cwd) => cwd)];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>${escapeHtml(title)}</title>
<style>body{max-width:960px;margin:24px auto;padding:0 16px;background:#f8f9fb}dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font:13px system-ui,sans-serif}dt{color:#5b6475}dd{margin:0;overflow-wrap:anywhere}${CONVERSATION_CSS}</style>
</head><body class="conv">
<h1>${escapeHtml(title)}</h1>
<dl>${rows.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join("")}</dl>
<main>
${renderItemsHtml(items, prices)}
</main>
</body></html>
`;
}

export type ExportFormat = "md" | "html" | "jsonl";

/** `jsonl`: the records in file order, escaped; md/html: in reading order. A redactor replaces secrets first, side requests' (the title) too. */
export async function exportSession(data: SessionData, format: ExportFormat, prices = BUILTIN_PRICES, redactor: Redactor | null = null): Promise<string> {
  if (redactor !== null) {
    const all = await redactor.redact([...data.records, ...data.side]);
    data = { ...data, records: all.slice(0, data.records.length), side: all.slice(data.records.length) };
  }
  if (format === "jsonl") return data.records.map((r) => terminalSafeJson(compactJson(r)) + "\n").join("");
  const tree = buildTree(data.records);
  const [summary, items] = [summarize(data, tree, prices), outline(tree)];
  return format === "html" ? renderHtmlDocument(summary, items, prices) : renderMarkdown(summary, items, prices);
}

export function renderMarkdown(summary: SessionSummary, items: Item[], prices: PriceTable = BUILTIN_PRICES): string {
  const lines = facts(summary, (cwd) => code(scrubLine(cwd))).map(([k, v]) => `- ${k}: ${scrubLine(v)}`);
  return [`# Claude Code session ${scrubLine(summary.sessionId ?? summary.dir)}`, "", ...lines, "", "---", ""].join("\n") + itemsMd(items, prices);
}

function itemsMd(items: Item[], prices: PriceTable): string {
  return walk(items, {
    record: (record, continued) => recordMd(record, continued, prices),
    compaction: (r) => `---\n\n**${compactionText(r)}**${isCompactBoundary(r) ? "" : " — the summary below starts the compacted conversation"}\n\n---\n`,
    branches: (item) =>
      item.branches.map((branch) => {
        const body = `**Other branch** (${where(item.at)})\n\n${itemsMd(branch, prices)}`;
        return body.trimEnd().split("\n").map((l) => (l === "" ? ">" : `> ${l}`)).join("\n") + "\n";
      }),
  }).join("\n");
}

function recordMd(r: Rec, continued: boolean, prices: PriceTable): string {
  const message = messageOf(r);
  const time = typeof r.timestamp === "string" ? scrubControl(r.timestamp) : "";
  if (isApiSystem(r)) return folded(`System context · ${time} · ${environmentSummary(systemText(r))}`, fence(systemText(r)));
  if (r.type !== "user" && r.type !== "assistant") return `*${scrubControl(otherType(r))} record · ${time}*\n`;
  const flags = recordFlags(r).join(", ");
  const who = r.type === "user" ? "User" : `Assistant${typeof message?.model === "string" ? ` (${scrubControl(message.model)})` : ""}`;
  const answer = r.type === "assistant" ? answerLine(r, prices) : null;
  const head = continued ? "" : `### ${who} · ${time}${answer === null ? "" : ` · ${answer}`}${flags ? ` · _${flags}_` : ""}\n\n`;
  return head + blocksOf(message?.content).map(blockMd).join("\n") + "\n";
}

const MD_BLOCKS: Record<Kind, (b: Block) => string> = {
  injected: (b) => folded(`Added by Claude Code: ${injectedSummary(String(b.text))}`, fence(String(b.text))),
  text: (b) => `${scrubControl(String(b.text ?? ""))}\n`,
  thinking: (b) => `**Thinking**\n\n${fence(String(b.thinking ?? ""))}`,
  redacted: () => "_(redacted thinking)_\n",
  call: (b) => `**Tool call** ${code(String(b.name ?? "?"))} (${code(String(b.id ?? ""))})\n\n${fence(jsonText(b.input ?? {}), "json")}\n`,
  result: (b) => {
    const label = `**Tool result** (${code(String(b.tool_use_id ?? ""))})${b.is_error === true ? " — error" : ""}`;
    const parts = blocksOf(b.content).map((x) => (x.type === "text" ? fence(String(x.text ?? "")) : blockMd(x)));
    return `${label}\n\n${parts.length > 0 ? parts.join("\n") : "_(empty)_\n"}`;
  },
  attachment: (b) => `${attachmentNote(b)}\n`,
  other: (b) => `_${String(b.type ?? "block")} block_\n\n${fence(jsonText(b), "json")}\n`,
};

const blockMd = (b: Block) => MD_BLOCKS[kindOf(b)](b);

/** Matched lazily: a text of a million runs is no array of a million matches. */
function longestBackticks(text: string): number {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  return longest;
}

function fence(raw: string, lang = ""): string {
  const text = scrubControl(raw);
  const f = "`".repeat(Math.max(2, longestBackticks(text)) + 1);
  return `${f}${lang}\n${text}\n${f}\n`;
}

function code(raw: string): string {
  const text = scrubControl(raw);
  const f = "`".repeat(longestBackticks(text) + 1);
  return f.length > 1 ? `${f} ${text} ${f}` : `${f}${text}${f}`;
}

const folded = (summary: string, body: string) => `<details><summary>⚙ ${escapeHtml(scrubLine(summary))}</summary>\n\n${body}\n</details>\n`;

type TextStyle = Record<"user" | "assistant" | "tool" | "dim" | "bold", (text: string) => string>;

const same = (text: string) => text;
export const PLAIN: TextStyle = { user: same, assistant: same, tool: same, dim: same, bold: same };
const sgr = (code: string) => (t: string) => `\x1b[${code}m${t}\x1b[0m`;
export const ANSI_STYLE: TextStyle = { user: sgr("1;36"), assistant: sgr("1;32"), tool: sgr("35"), dim: sgr("2"), bold: sgr("1") };

type TextOptions = { full: boolean; style: TextStyle; zone: Zone; prices: PriceTable };

const indent = (text: string, prefix = "  ") => text.split("\n").map((l) => (l === "" ? prefix.trimEnd() : prefix + l)).join("\n");

/** Message blocks separated by a blank line; an indented one (a further block of the same answer, the environment line) joins the one before. */
const paragraphs = (parts: string[]) => parts.map((p, i) => (i === 0 ? p : p.startsWith(" ") || p.startsWith("\x1b[2m ") ? `\n${p}` : `\n\n${p}`)).join("");

export function renderText(items: Item[], o: TextOptions): string {
  const s = o.style;
  const pairing = pairs(items);
  let lastEnvironment: string | null = null;

  const result = (b: Block): string => {
    const text = blocksOf(b.content).map((x) =>
      x.type === "text" ? String(x.text ?? "") : x.type === "image" || x.type === "document" ? attachmentNote(x) : `[${String(x.type)} block]`
    ).join("\n");
    const lines = scrubControl(text).replace(/\n+$/, "").split("\n");
    const error = b.is_error === true ? "error: " : "";
    if (lines.length === 1 && lines[0] === "") return `    ⎿ ${s.dim(`${error}(no output)`)}`;
    const kept = o.full ? lines : lines.slice(0, 4);
    const out = kept.map((l, i) => `${i === 0 ? `    ⎿ ${error}` : "      "}${l}`.trimEnd());
    if (lines.length > kept.length) out.push(s.dim(`      … ${plural(lines.length - kept.length, "more line")} (--full shows them)`));
    return out.join("\n");
  };

  const blocks: Record<Kind, (b: Block, r: Rec) => string | null> = {
    injected: (b) =>
      o.full
        ? injectedParts(String(b.text)).map((p) => s.dim(`  ⚙ ${p.tag || "context"}`) + (p.inner === "" ? "" : `\n${indent(p.inner, "    ")}`)).join("\n")
        : s.dim(`  ⚙ ${injectedSummary(String(b.text))}`),
    text: (b, r) =>
      !o.full && isCompactSummary(r)
        ? s.dim(`  ${oneLine(scrubControl(String(b.text ?? "")), 160)} (--full shows the whole summary)`)
        : indent(scrubControl(String(b.text ?? "")).trimEnd()),
    thinking: (b) => {
      const t = scrubControl(String(b.thinking ?? "")).trim();
      return o.full
        ? `${s.dim("  ∴ thinking")}\n${indent(t, "    ")}`
        : s.dim(`  ∴ thinking${t === "" ? " (not shown by the API)" : ` (${t.length} characters): ${oneLine(t, 100)}`}`);
    },
    redacted: () => s.dim("  ∴ (redacted thinking)"),
    call: (b) => {
      const lines = [`  ${s.tool("●")} ${s.bold(toolLine(b.name, b.input))}`];
      if (o.full) lines.push(indent(scrubControl(jsonText(b.input ?? {})), "    "));
      const found = pairing.take(b);
      if (found !== undefined) lines.push(result(found));
      return lines.join("\n");
    },
    result: (b) => pairing.taken(b) ? null : `  ${s.tool("●")} ${s.dim(`result of ${scrubControl(String(b.tool_use_id ?? "a tool call"))}`)}\n${result(b)}`,
    attachment: (b) => `  ${attachmentNote(b)}`,
    other: (b) =>
      o.full
        ? `  [${String(b.type ?? "block")}]\n${indent(scrubControl(jsonText(b)), "    ")}`
        : s.dim(`  [${scrubControl(String(b.type ?? "unknown"))} block]`),
  };

  const record = (r: Rec, continued: boolean): string | null => {
    const message = messageOf(r);
    const when = Number.isFinite(timeOf(r)) ? localDateTime(timeOf(r), o.zone, true) : "?";
    if (isApiSystem(r)) {
      const text = systemText(r);
      if (o.full) return `${s.dim(`System context · ${when}`)}\n${indent(scrubControl(text))}`;
      const unchanged = text === lastEnvironment;
      lastEnvironment = text;
      return s.dim(`  ⚙ ${unchanged ? "environment from Claude Code, unchanged" : environmentSummary(text)}`);
    }
    if (r.type !== "user" && r.type !== "assistant") return s.dim(`${otherType(r)} record · ${when}`);
    const content = blocksOf(message?.content);
    const body = content.map((b) => blocks[kindOf(b)](b, r)).filter((t): t is string => t !== null);
    if (body.length === 0 && (continued || content.length > 0)) return null;
    if (continued) return body.join("\n");
    const answer = r.type === "assistant" ? answerLine(r, o.prices) : null;
    const model = typeof message?.model === "string" ? ` · ${scrubControl(message.model)}` : "";
    const who = r.type === "user" ? s.user(isCompactSummary(r) ? "Compaction summary" : "User") : `${s.assistant("Assistant")}${model}`;
    const flags = recordFlags(r).join(", ");
    const head = `${who} · ${when}${answer === null ? "" : s.dim(` · ${answer}`)}${flags ? ` · ${flags}` : ""}`;
    return body.length === 0 ? `${head}\n  ${s.dim("(empty)")}` : `${head}\n${body.join("\n")}`;
  };

  const all = (list: Item[]): string[] =>
    walk(list, {
      record,
      compaction: (r) => s.dim(`──── ${compactionText(r)}${isCompactBoundary(r) ? "" : "; the summary below starts the compacted conversation"} ────`),
      branches: (item) => item.branches.map((b) => s.dim(`┆ Other branch (${where(item.at)})`) + "\n" + indent(paragraphs(all(b)), "┆ ")),
    });
  return paragraphs(all(items)) + "\n";
}
