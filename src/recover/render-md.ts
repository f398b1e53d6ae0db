/**
 * A conversation as Markdown (`sessiontap show`, `export --format md`): prompts and answers as written,
 * tool calls with their input, tool results, thinking and system context folded in `<details>`, image
 * references as a line saying what was there; other branches quoted where they fork; compactions as a
 * rule. Every record of the outline once, in its order. Pure.
 */
import { compactJson, jsonText } from "./json-text.ts";
import { blocksOf, continuesMessage, isApiSystem, isCompactBoundary, isInjectedText, messageOf, type Block, type Rec } from "./records.ts";
import type { SessionSummary } from "./summary.ts";
import type { Item } from "./tree.ts";

/** A Markdown document: a header of facts, then the conversation. */
export function renderMarkdown(summary: SessionSummary, items: Item[]): string {
  const lines = [
    `# Claude Code session ${summary.sessionId ?? summary.dir}`,
    "",
    `- Working directory: ${summary.cwd === null ? "unknown" : code(summary.cwd)}`,
    `- Time: ${summary.firstTimestamp ?? "?"} – ${summary.lastTimestamp ?? "?"}`,
    `- Records: ${summary.records} (${summary.userRecords} user, ${summary.assistantRecords} assistant)`,
    `- Branches: ${summary.leaves} ${summary.leaves === 1 ? "leaf" : "leaves"}; compactions: ${summary.compactions}`,
    "",
    "---",
    "",
  ];
  return lines.join("\n") + renderItems(items);
}

/** The conversation part alone. */
export function renderItems(items: Item[]): string {
  const out: string[] = [];
  let previous: Rec | null = null;
  for (const item of items) {
    if (item.kind === "record") {
      out.push(renderRecord(item.record, continuesMessage(previous, item.record)));
      previous = item.record;
    } else if (item.kind === "compaction") {
      out.push(compactionLine(item.record));
      previous = null;
    } else {
      for (const branch of item.branches) {
        const where = item.at === null ? "a separate conversation in this session" : "forks after the message above; not the current branch";
        const body = `**Other branch** (${where})\n\n${renderItems(branch)}`;
        out.push(body.trimEnd().split("\n").map((l) => (l === "" ? ">" : `> ${l}`)).join("\n") + "\n");
      }
      previous = null;
    }
  }
  return out.join("\n");
}


/** The rule that marks a compaction. */
function compactionLine(r: Rec): string {
  const meta = (r.compactMetadata ?? {}) as Record<string, unknown>;
  const parts = [typeof meta.trigger === "string" ? meta.trigger : null, typeof meta.preTokens === "number" ? `${meta.preTokens} tokens before` : null].filter(Boolean);
  return `---\n\n**Conversation compacted${parts.length > 0 ? ` (${parts.join(", ")})` : ""}**${isCompactBoundary(r) ? "" : " — the summary below starts the compacted conversation"}\n\n---\n`;
}

/** A record's heading and blocks. */
function renderRecord(r: Rec, isContinuation: boolean): string {
  const message = messageOf(r);
  const time = typeof r.timestamp === "string" ? r.timestamp : "";
  const flags = [r.reconstructed === true ? "reconstructed from a later request" : null, message?.stop_reason === "interrupted" ? "interrupted" : null]
    .filter(Boolean)
    .join(", ");
  if (isApiSystem(r)) {
    return details(`System context · ${time}`, fence(blocksOf(message?.content).map((b) => String(b.text ?? compactJson(b))).join("\n"))) + "\n";
  }
  if (r.type !== "user" && r.type !== "assistant") {
    return `*${String(r.type)}${r.subtype ? `/${String(r.subtype)}` : ""} record · ${time}*\n`;
  }
  const who = r.type === "user" ? "User" : `Assistant${typeof message?.model === "string" ? ` (${message.model})` : ""}`;
  const head = isContinuation ? "" : `### ${who} · ${time}${flags ? ` · _${flags}_` : ""}\n\n`;
  return head + blocksOf(message?.content).map(renderBlock).join("\n") + "\n";
}

/** One content block. */
function renderBlock(b: Block): string {
  switch (b.type) {
    case "text":
      if (isInjectedText(String(b.text ?? ""))) return details("Added by Claude Code", fence(String(b.text))) + "\n";
      return `${String(b.text ?? "")}\n`;
    case "thinking":
      return details("Thinking", fence(String(b.thinking ?? ""))) + "\n";
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

/** What an image or document block held: its media type and sha256 (the mirror keeps no bytes). */
export function attachmentNote(b: Block): string {
  const s = (b.source ?? {}) as Record<string, unknown>;
  const media = typeof s.media_type === "string" ? s.media_type : "unknown type";
  if (s.type === "reference") return `[${String(b.type)}: ${media}, sha256 ${String(s.sha256 ?? "?")}]`;
  if (s.type === "base64" && typeof s.data === "string") return `[${String(b.type)}: ${media}, ${Math.floor((s.data.length * 3) / 4)} bytes inline]`;
  if (s.type === "url") return `[${String(b.type)}: ${String(s.url)}]`;
  return `[${String(b.type)}: ${media}]`;
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
function fence(text: string, lang = ""): string {
  const f = "`".repeat(Math.max(2, longestBackticks(text)) + 1);
  return `${f}${lang}\n${text}\n${f}\n`;
}

/** Inline code that survives backticks inside. */
function code(text: string): string {
  const longest = longestBackticks(text);
  const f = "`".repeat(longest + 1);
  return longest > 0 ? `${f} ${text} ${f}` : `${f}${text}${f}`;
}

/** A collapsed section (GitHub and most Markdown viewers render `<details>`). */
function details(summary: string, body: string): string {
  return `<details><summary>${summary.replace(/[<>&]/g, "")}</summary>\n\n${body}\n</details>\n`;
}
