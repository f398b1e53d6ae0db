// A conversation as HTML: one `<article>` per record (the viewer inserts the same fragments live), a tool call and its result as one pair,
// context folded, every string escaped and rid of control characters, nothing loaded from elsewhere (docs/DESIGN.md "The viewer"). Pure.
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";
import { answerLine, usageLine } from "../usage/tokens.ts";
import { plural } from "../utils/plural.ts";
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
  toolLine,
  uuidOf,
} from "./records.ts";
import { countsText, type SessionSummary } from "./summary.ts";
import { type Item, renderOutline, toolResults } from "./tree.ts";

/** For HTML content and attribute values, control characters removed first. */
export function escapeHtml(text: string): string {
  return scrubControl(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** The stylesheet of rendered conversations (also part of the viewer page). */
export const CONVERSATION_CSS = `
.conv{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330}
.rec{border:1px solid #d8dde6;border-radius:8px;margin:10px 0;padding:8px 12px;background:#fff;min-width:0;overflow-wrap:anywhere}
.rec.user{background:#f3f7ff;border-color:#c9d8f5}
.rec.tool-results{background:#f7f7f4;border-color:#dcdcd2}
.rec.system{background:#fafafa;color:#555;padding:4px 12px}
.rec.continued{margin-top:-6px;border-top-style:dashed}
.rec.fresh{outline:2px solid #2f9e44;transition:outline-color 2s}
.rec[hidden]{display:none}
.rec header{font-size:12px;color:#5b6475;margin-bottom:4px;display:flex;gap:4px 8px;flex-wrap:wrap;align-items:baseline}
.rec header .role{font-weight:600;color:#1d2330}
.rec header .usage{color:#868e96}
.flag{background:#fff3bf;border-radius:4px;padding:0 4px}
.text{white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f1f3f5;border-radius:6px;padding:6px 8px;margin:4px 0;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;max-width:100%}
.tool-use{border-left:3px solid #7048e8;padding-left:8px;margin:6px 0}
.tool-use>summary{font:12px/1.5 ui-monospace,SFMono-Regular,Menlo,monospace;color:#1d2330;overflow-wrap:anywhere}
.tool-use .tool-name{font-weight:600;color:#5f3dc4}
.tool-use .tool-state{color:#868e96;font-family:system-ui,sans-serif}
.tool-use.error{border-left-color:#e03131}
.tool-result{border-left:3px solid #868e96;padding-left:8px;margin:6px 0}
.tool-result.error{border-left-color:#e03131}
.tool-use .tool-result{border-left:0;padding-left:0}
.tool-label{font-size:12px;color:#5b6475}
.attachment{font-style:italic;color:#5b6475}
details>summary{cursor:pointer;color:#5b6475}
.injected>summary,.env>summary{font-size:12px;overflow-wrap:anywhere}
mark{background:#ffe066;color:inherit;border-radius:2px}
.compaction{text-align:center;color:#9c36b5;border-top:2px dashed #cc5de8;margin:18px 0;padding-top:4px;font-weight:600}
.branches{border-left:3px dotted #f08c00;margin:8px 0 8px 12px;padding-left:10px}
.branches>summary{color:#d9480f}
.branch{opacity:.85}
`;

/** A tool call's pair starts closed above this many lines of input and result. */
const OPEN_LINES = 8;

export interface RecordHtmlOptions {
  /** A further block of the previous record's assistant message (Claude Code writes one record per block). */
  continued?: boolean;
  /** Tool results by tool_use_id: each is shown inside its call's pair (and left out of its own record). */
  results?: Map<string, Block>;
  /** Filled with the tool_use_ids whose results were shown inside a pair. */
  paired?: Set<string>;
  prices?: PriceTable;
}

/** UTC in the text and the title; the viewer rewrites the text to the reader's zone. */
function timeHtml(iso: string): string {
  const utc = iso.replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, " UTC");
  return `<time datetime="${escapeHtml(iso)}" title="${escapeHtml(utc)}">${escapeHtml(utc)}</time>`;
}

/** One record as an `<article>` (id `r-<uuid>`, with its parent in `data-parent`). */
export function renderRecordHtml(r: Rec, options: RecordHtmlOptions = {}): string {
  const message = messageOf(r);
  const id = uuidOf(r) ?? "";
  const parent = typeof r.parentUuid === "string" ? r.parentUuid : "";
  const time = typeof r.timestamp === "string" ? r.timestamp : "";
  const blocks = blocksOf(message?.content);
  const toolResults = r.type === "user" && blocks.length > 0 && blocks.every((b) => b.type === "tool_result");
  const kind = isApiSystem(r) ? "system" : r.type === "user" ? (toolResults ? "user tool-results" : "user") : r.type === "assistant" ? "assistant" : "system";
  const role = isApiSystem(r)
    ? "Context"
    : r.type === "user"
    ? (toolResults ? "Tool result" : "User")
    : r.type === "assistant"
    ? "Assistant"
    : `${String(r.type)}${r.subtype ? `/${String(r.subtype)}` : ""}`;
  const flags = recordFlags(r, true);
  const answer = r.type === "assistant" ? answerLine(r, options.prices ?? BUILTIN_PRICES) : null;
  const head = [
    `<span class="role">${escapeHtml(role)}</span>`,
    typeof message?.model === "string" ? `<span class="model">${escapeHtml(message.model)}</span>` : "",
    timeHtml(time),
    answer === null ? "" : `<span class="usage">${escapeHtml(answer)}</span>`,
    ...flags.map((f) => `<span class="flag">${escapeHtml(f)}</span>`),
  ].join("");
  let body: string;
  let empty = false;
  if (isApiSystem(r)) {
    const text = blocks.map((b) => (typeof b.text === "string" ? b.text : compactJson(b))).join("\n");
    body = `<details class="env"><summary>${escapeHtml(environmentSummary(text))}</summary><pre>${escapeHtml(text)}</pre></details>`;
  } else if (r.type !== "user" && r.type !== "assistant") {
    body = `<pre>${escapeHtml(jsonText(r))}</pre>`;
  } else {
    const shown = blocks.filter((b) => !(b.type === "tool_result" && typeof b.tool_use_id === "string" && options.paired?.has(b.tool_use_id)));
    empty = shown.length === 0 && blocks.length > 0;
    body = shown.map((b) => renderBlockHtml(b, options)).join("");
  }
  // A record whose every block is shown inside its call's pair stays in the page (links, live updates find it) but hidden.
  const resultIds = blocks.filter((b) => b.type === "tool_result" && typeof b.tool_use_id === "string").map((b) => b.tool_use_id as string);
  const attrs =
    `class="rec ${kind}${options.continued ? " continued" : ""}${empty ? " paired" : ""}" id="r-${escapeHtml(id)}" data-uuid="${escapeHtml(id)}" data-parent="${
      escapeHtml(parent)
    }"` +
    (resultIds.length > 0 ? ` data-tool-results="${escapeHtml(resultIds.join(" "))}"` : "") + (empty ? " hidden" : "");
  return `<article ${attrs}>${options.continued ? "" : `<header>${head}</header>`}${body}</article>`;
}

function resultBody(b: Block, options: RecordHtmlOptions): string {
  const inner = blocksOf(b.content).map((x) => (x.type === "text" ? `<pre>${escapeHtml(String(x.text ?? ""))}</pre>` : renderBlockHtml(x, options))).join("");
  return inner || '<div class="attachment">(no output)</div>';
}

/** A tool result on its own (its call is not on the page). */
function resultHtml(b: Block, options: RecordHtmlOptions): string {
  const error = b.is_error === true;
  return `<div class="tool-result${error ? " error" : ""}" data-tool-use-id="${
    escapeHtml(String(b.tool_use_id ?? ""))
  }"><div class="tool-label">Tool result <code>${escapeHtml(String(b.tool_use_id ?? ""))}</code>${error ? " (error)" : ""}</div>${
    resultBody(b, options)
  }</div>`;
}

const lineCount = (text: string) => text.split("\n").length;

/** A tool call and, when known, its result: one `<details>`, its summary the call in one line, closed when long. */
function toolPairHtml(b: Block, options: RecordHtmlOptions): string {
  const id = String(b.id ?? "");
  const input = jsonText(b.input ?? {});
  const result = options.results?.get(id);
  if (result !== undefined) options.paired?.add(id);
  const resultText = result === undefined ? "" : blocksOf(result.content).map((x) => String(x.text ?? "")).join("\n");
  const error = result?.is_error === true;
  const lines = lineCount(input) + (result === undefined ? 0 : lineCount(resultText));
  const state = result === undefined ? "" : error ? "error" : `${plural(lineCount(resultText.replace(/\n+$/, "")), "line")}`;
  const line = toolLine(b.name, b.input);
  const name = line.split(":")[0];
  const what = line.slice(name.length);
  const inside = result === undefined
    ? ""
    : `<div class="tool-result${error ? " error" : ""}" data-tool-use-id="${escapeHtml(id)}">${resultBody(result, options)}</div>`;
  return `<details class="tool-use${error ? " error" : ""}" data-tool-use-id="${escapeHtml(id)}"${lines <= OPEN_LINES ? " open" : ""}>` +
    `<summary><span class="tool-name">${escapeHtml(name)}</span><span class="tool-what">${escapeHtml(what)}</span> <span class="tool-state">${
      escapeHtml(state)
    }</span></summary>` +
    `<pre class="tool-input">${escapeHtml(input)}</pre><div class="tool-out">${inside}</div></details>`;
}

function renderBlockHtml(b: Block, options: RecordHtmlOptions): string {
  switch (b.type) {
    case "text": {
      const text = String(b.text ?? "");
      if (isInjectedText(text)) {
        return `<details class="injected"><summary>${escapeHtml(`⚙ ${injectedSummary(text)}`)}</summary><pre>${escapeHtml(text)}</pre></details>`;
      }
      return `<div class="text">${escapeHtml(text)}</div>`;
    }
    case "thinking":
      return `<details class="thinking"><summary>Thinking</summary><div class="text">${escapeHtml(String(b.thinking ?? ""))}</div></details>`;
    case "redacted_thinking":
      return `<div class="attachment">(redacted thinking)</div>`;
    case "tool_use":
    case "server_tool_use":
    case "mcp_tool_use":
      return toolPairHtml(b, options);
    case "tool_result":
      return resultHtml(b, options);
    case "image":
    case "document":
      return `<div class="attachment">${escapeHtml(attachmentNote(b))}</div>`;
    default:
      return `<details><summary>${escapeHtml(String(b.type ?? "unknown"))} block</summary><pre>${escapeHtml(jsonText(b))}</pre></details>`;
  }
}

function compactionHtml(r: Rec): string {
  const id = isCompactBoundary(r) ? ` id="r-${escapeHtml(uuidOf(r) ?? "")}" data-uuid="${escapeHtml(uuidOf(r) ?? "")}"` : "";
  return `<div class="compaction"${id}>${escapeHtml(compactionText(r))}</div>`;
}

/** An outline as HTML fragments, each tool result inside its call's pair. */
export function renderItemsHtml(items: Item[], prices: PriceTable = BUILTIN_PRICES): string {
  return renderItems(items, { results: toolResults(items), paired: new Set(), prices });
}

/** With the pairing state shared across nested branches. */
function renderItems(items: Item[], options: RecordHtmlOptions): string {
  return renderOutline(items, {
    record: (record, continued) => renderRecordHtml(record, { ...options, continued }),
    compaction: compactionHtml,
    branches: (item) => {
      const n = item.branches.length;
      const label = item.at === null
        ? `${plural(n, "separate conversation")} in this session`
        : `${n} other branch${n === 1 ? "" : "es"} fork${n === 1 ? "s" : ""} here (rewound or retried; not the current branch)`;
      return [
        `<details class="branches" data-at="${escapeHtml(item.at ?? "")}"><summary>${escapeHtml(label)}</summary>${
          item.branches.map((b) => `<div class="branch">${renderItems(b, options)}</div>`).join("")
        }</details>`,
      ];
    },
  }).join("\n");
}

/** A standalone HTML document of a session (no external assets). */
export function renderHtmlDocument(summary: SessionSummary, items: Item[], prices: PriceTable = BUILTIN_PRICES): string {
  const id = summary.sessionId ?? summary.dir;
  const title = summary.title ?? `Claude Code session ${id}`;
  const facts = [
    ["Session", id],
    ["Working directory", summary.cwd ?? "unknown"],
    ["Time", `${summary.firstTimestamp ?? "?"} – ${summary.lastTimestamp ?? "?"} (UTC)`],
    ["Conversation", countsText(summary.counts)],
    ["Branches", `${plural(summary.leaves, "leaf", "leaves")}; compactions: ${summary.compactions}`],
    ["Usage", usageLine(summary.usage, summary.costUSD)],
  ];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>${escapeHtml(title)}</title>
<style>body{max-width:960px;margin:24px auto;padding:0 16px;background:#f8f9fb}dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font:13px system-ui,sans-serif}dt{color:#5b6475}dd{margin:0;overflow-wrap:anywhere}${CONVERSATION_CSS}</style>
</head><body class="conv">
<h1>${escapeHtml(title)}</h1>
<dl>${facts.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join("")}</dl>
<main>
${renderItemsHtml(items, prices)}
</main>
</body></html>
`;
}
