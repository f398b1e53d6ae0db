/**
 * A conversation as HTML: one `<article>` per record (the viewer inserts the same fragments live), other
 * branches folded where they fork, compactions as a divider, and a standalone document with inline CSS
 * for `export --format html`. Every string from a record is escaped; nothing is loaded from elsewhere.
 * Pure.
 */
import { compactJson, jsonText } from "./json-text.ts";
import { blocksOf, continuesMessage, isApiSystem, isCompactBoundary, isInjectedText, messageOf, uuidOf, type Block, type Rec } from "./records.ts";
import { attachmentNote } from "./render-md.ts";
import type { SessionSummary } from "./summary.ts";
import type { Item } from "./tree.ts";

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** The stylesheet of rendered conversations (also part of the viewer page). */
export const CONVERSATION_CSS = `
.conv{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330}
.rec{border:1px solid #d8dde6;border-radius:8px;margin:10px 0;padding:8px 12px;background:#fff}
.rec.user{background:#f3f7ff;border-color:#c9d8f5}
.rec.tool-results{background:#f7f7f4;border-color:#dcdcd2}
.rec.system{background:#fafafa;color:#555}
.rec.continued{margin-top:-6px;border-top-style:dashed}
.rec.fresh{outline:2px solid #2f9e44;transition:outline-color 2s}
.rec header{font-size:12px;color:#5b6475;margin-bottom:4px;display:flex;gap:8px;flex-wrap:wrap}
.rec header .role{font-weight:600;color:#1d2330}
.flag{background:#fff3bf;border-radius:4px;padding:0 4px}
.text{white-space:pre-wrap;word-wrap:break-word;margin:4px 0}
pre{white-space:pre-wrap;word-wrap:break-word;background:#f1f3f5;border-radius:6px;padding:6px 8px;margin:4px 0;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
.tool-use,.tool-result{border-left:3px solid #7048e8;padding-left:8px;margin:6px 0}
.tool-result{border-left-color:#868e96}
.tool-result.error{border-left-color:#e03131}
.tool-name{font-weight:600}
.attachment{font-style:italic;color:#5b6475}
details>summary{cursor:pointer;color:#5b6475}
.compaction{text-align:center;color:#9c36b5;border-top:2px dashed #cc5de8;margin:18px 0;padding-top:4px;font-weight:600}
.branches{border-left:3px dotted #f08c00;margin:8px 0 8px 12px;padding-left:10px}
.branches>summary{color:#d9480f}
.branch{opacity:.85}
`;

/** Options for one record's fragment. */
export interface RecordHtmlOptions {
  /** A further block of the previous record's assistant message (Claude Code writes one record per block). */
  continued?: boolean;
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
  const role = isApiSystem(r) ? "System context" : r.type === "user" ? (toolResults ? "Tool result" : "User") : r.type === "assistant" ? "Assistant" : `${String(r.type)}${r.subtype ? `/${String(r.subtype)}` : ""}`;
  const flags: string[] = [];
  if (r.reconstructed === true) flags.push("reconstructed");
  if (message?.stop_reason === "interrupted") flags.push("interrupted");
  const head = [
    `<span class="role">${escapeHtml(role)}</span>`,
    typeof message?.model === "string" ? `<span class="model">${escapeHtml(message.model)}</span>` : "",
    `<time datetime="${escapeHtml(time)}">${escapeHtml(time.replace("T", " ").replace(/\.\d+Z$/, "Z"))}</time>`,
    ...flags.map((f) => `<span class="flag">${escapeHtml(f)}</span>`),
  ].join("");
  const attrs = `class="rec ${kind}${options.continued ? " continued" : ""}" id="r-${escapeHtml(id)}" data-uuid="${escapeHtml(id)}" data-parent="${escapeHtml(parent)}"`;
  let body: string;
  if (isApiSystem(r)) {
    const text = blocks.map((b) => (typeof b.text === "string" ? b.text : compactJson(b))).join("\n");
    body = `<details><summary>${escapeHtml(`${text.length} characters of environment context`)}</summary><pre>${escapeHtml(text)}</pre></details>`;
  } else if (r.type !== "user" && r.type !== "assistant") {
    body = `<pre>${escapeHtml(jsonText(r))}</pre>`;
  } else {
    body = blocks.map(renderBlockHtml).join("");
  }
  return `<article ${attrs}>${options.continued ? "" : `<header>${head}</header>`}${body}</article>`;
}

/** One content block. */
function renderBlockHtml(b: Block): string {
  switch (b.type) {
    case "text":
      if (isInjectedText(String(b.text ?? ""))) return `<details class="injected"><summary>Added by Claude Code</summary><pre>${escapeHtml(String(b.text))}</pre></details>`;
      return `<div class="text">${escapeHtml(String(b.text ?? ""))}</div>`;
    case "thinking":
      return `<details class="thinking"><summary>Thinking</summary><div class="text">${escapeHtml(String(b.thinking ?? ""))}</div></details>`;
    case "redacted_thinking":
      return `<div class="attachment">(redacted thinking)</div>`;
    case "tool_use":
    case "server_tool_use":
    case "mcp_tool_use":
      return `<div class="tool-use" data-tool-use-id="${escapeHtml(String(b.id ?? ""))}"><div>Tool call <span class="tool-name">${escapeHtml(String(b.name ?? "?"))}</span> <code>${escapeHtml(String(b.id ?? ""))}</code></div><pre>${escapeHtml(jsonText(b.input ?? {}))}</pre></div>`;
    case "tool_result": {
      const inner = blocksOf(b.content).map((x) => (x.type === "text" ? `<pre>${escapeHtml(String(x.text ?? ""))}</pre>` : renderBlockHtml(x))).join("");
      const error = b.is_error === true;
      return `<div class="tool-result${error ? " error" : ""}" data-tool-use-id="${escapeHtml(String(b.tool_use_id ?? ""))}"><div>Tool result <code>${escapeHtml(String(b.tool_use_id ?? ""))}</code>${error ? " (error)" : ""}</div>${inner || '<div class="attachment">(empty)</div>'}</div>`;
    }
    case "image":
    case "document":
      return `<div class="attachment">${escapeHtml(attachmentNote(b))}</div>`;
    default:
      return `<details><summary>${escapeHtml(String(b.type ?? "unknown"))} block</summary><pre>${escapeHtml(jsonText(b))}</pre></details>`;
  }
}

/** The compaction divider. */
function compactionHtml(r: Rec): string {
  const meta = (r.compactMetadata ?? {}) as Record<string, unknown>;
  const parts = [typeof meta.trigger === "string" ? meta.trigger : null, typeof meta.preTokens === "number" ? `${meta.preTokens} tokens before` : null].filter(Boolean);
  const id = isCompactBoundary(r) ? ` id="r-${escapeHtml(uuidOf(r) ?? "")}" data-uuid="${escapeHtml(uuidOf(r) ?? "")}"` : "";
  return `<div class="compaction"${id}>Conversation compacted${escapeHtml(parts.length > 0 ? ` (${parts.join(", ")})` : "")}</div>`;
}

/** A conversation outline as HTML fragments. */
export function renderItemsHtml(items: Item[]): string {
  const out: string[] = [];
  let previous: Rec | null = null;
  for (const item of items) {
    if (item.kind === "record") {
      out.push(renderRecordHtml(item.record, { continued: continuesMessage(previous, item.record) }));
      previous = item.record;
    } else if (item.kind === "compaction") {
      out.push(compactionHtml(item.record));
      previous = null;
    } else {
      const n = item.branches.length;
      const label = item.at === null
        ? `${n} separate conversation${n === 1 ? "" : "s"} in this session`
        : `${n} other branch${n === 1 ? "" : "es"} fork${n === 1 ? "s" : ""} here (rewound or retried; not the current branch)`;
      out.push(`<details class="branches" data-at="${escapeHtml(item.at ?? "")}"><summary>${escapeHtml(label)}</summary>${item.branches.map((b) => `<div class="branch">${renderItemsHtml(b)}</div>`).join("")}</details>`);
      previous = null;
    }
  }
  return out.join("\n");
}


/** A standalone HTML document of a session (no external assets). */
export function renderHtmlDocument(summary: SessionSummary, items: Item[]): string {
  const title = `Claude Code session ${summary.sessionId ?? summary.dir}`;
  const facts = [
    ["Working directory", summary.cwd ?? "unknown"],
    ["Time", `${summary.firstTimestamp ?? "?"} – ${summary.lastTimestamp ?? "?"}`],
    ["Records", `${summary.records} (${summary.userRecords} user, ${summary.assistantRecords} assistant)`],
    ["Branches", `${summary.leaves} ${summary.leaves === 1 ? "leaf" : "leaves"}; compactions: ${summary.compactions}`],
  ];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>${escapeHtml(title)}</title>
<style>body{max-width:960px;margin:24px auto;padding:0 16px;background:#f8f9fb}dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font:13px system-ui,sans-serif}dt{color:#5b6475}${CONVERSATION_CSS}</style>
</head><body class="conv">
<h1>${escapeHtml(title)}</h1>
<dl>${facts.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join("")}</dl>
<main>
${renderItemsHtml(items)}
</main>
</body></html>
`;
}
