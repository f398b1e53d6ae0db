// A conversation as plain text for a terminal (`sessiontap show`): a tool call in one line with its result folded beneath, context and thinking
// in one line each (`full` shows all); never a tag or a raw control character; colour only through `style`. Pure.
import { type PriceTable } from "../usage/prices.ts";
import { answerLine } from "../usage/tokens.ts";
import { localDateTime, type Zone } from "../utils/local-time.ts";
import { plural } from "../utils/plural.ts";
import { compactJson, jsonText } from "./json-text.ts";
import {
  attachmentNote,
  type Block,
  blocksOf,
  compactionText,
  environmentSummary,
  injectedParts,
  injectedSummary,
  isApiSystem,
  isCompactBoundary,
  isCompactSummary,
  isInjectedText,
  messageOf,
  oneLine,
  type Rec,
  recordFlags,
  scrubControl,
  toolLine,
} from "./records.ts";
import { type Item, renderOutline, toolResults } from "./tree.ts";

export interface TextStyle {
  user(text: string): string;
  assistant(text: string): string;
  tool(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

const same = (text: string) => text;
export const PLAIN: TextStyle = { user: same, assistant: same, tool: same, dim: same, bold: same };
export const ANSI_STYLE: TextStyle = {
  user: (t) => `\x1b[1;36m${t}\x1b[0m`,
  assistant: (t) => `\x1b[1;32m${t}\x1b[0m`,
  tool: (t) => `\x1b[35m${t}\x1b[0m`,
  dim: (t) => `\x1b[2m${t}\x1b[0m`,
  bold: (t) => `\x1b[1m${t}\x1b[0m`,
};

export interface TextOptions {
  /** Everything: injected context, environment, thinking, tool inputs and whole results. */
  full: boolean;
  style: TextStyle;
  zone: Zone;
  prices: PriceTable;
}

const RESULT_LINES = 4;

function indent(text: string, prefix = "  "): string {
  return text.split("\n").map((l) => (l === "" ? prefix.trimEnd() : prefix + l)).join("\n");
}

function resultText(b: Block): string {
  return blocksOf(b.content).map((
    x,
  ) => (x.type === "text" ? String(x.text ?? "") : x.type === "image" || x.type === "document" ? attachmentNote(x) : `[${String(x.type)} block]`)).join("\n");
}

export function renderText(items: Item[], options: TextOptions): string {
  const renderer = new TextRenderer(options, toolResults(items));
  return blocks(renderer.items(items)) + "\n";
}

/** Message blocks separated by a blank line; an indented block (a further block of the same answer, the environment line) joins the one before. */
function blocks(parts: string[]): string {
  return parts.map((p, i) => (i === 0 ? p : p.startsWith(" ") || p.startsWith("\x1b[2m ") ? `\n${p}` : `\n\n${p}`)).join("");
}

/** Remembers which tool results were shown under their calls, and the last environment block (shown again only when it changed). */
class TextRenderer {
  private readonly shown = new Set<string>();
  private lastEnvironment: string | null = null;

  constructor(
    private readonly o: TextOptions,
    private readonly results: Map<string, Block>,
  ) {}

  items(items: Item[]): string[] {
    return renderOutline(items, {
      record: (record, continued) => this.record(record, continued),
      compaction: (record) => this.o.style.dim(compactionLine(record)),
      branches: (item) =>
        item.branches.map((branch) => {
          const where = item.at === null ? "a separate conversation in this session" : "forks after the message above; not the current branch";
          return this.o.style.dim(`┆ Other branch (${where})`) + "\n" + indent(blocks(this.items(branch)), "┆ ");
        }),
    });
  }

  /** One record's block, or null when everything in it was shown elsewhere (tool results under their calls). */
  private record(r: Rec, continued: boolean): string | null {
    const s = this.o.style;
    const message = messageOf(r);
    const when = typeof r.timestamp === "string" && Number.isFinite(Date.parse(r.timestamp)) ? localDateTime(Date.parse(r.timestamp), this.o.zone, true) : "?";
    if (isApiSystem(r)) {
      const text = blocksOf(message?.content).map((b) => String(b.text ?? compactJson(b))).join("\n");
      if (this.o.full) return `${s.dim(`System context · ${when}`)}\n${indent(scrubControl(text))}`;
      const unchanged = text === this.lastEnvironment;
      this.lastEnvironment = text;
      return s.dim(`  ⚙ ${unchanged ? "environment from Claude Code, unchanged" : environmentSummary(text)}`);
    }
    if (r.type !== "user" && r.type !== "assistant") return s.dim(`${String(r.type)}${r.subtype ? `/${String(r.subtype)}` : ""} record · ${when}`);
    const body: string[] = [];
    for (const b of blocksOf(message?.content)) {
      const text = this.block(b, r);
      if (text !== null) body.push(text);
    }
    if (body.length === 0 && (continued || blocksOf(message?.content).length > 0)) return null;
    if (continued) return body.join("\n");
    const flags = recordFlags(r)
      .filter(Boolean);
    let head: string;
    if (r.type === "user") head = `${s.user(isCompactSummary(r) ? "Compaction summary" : "User")} · ${when}`;
    else {
      const answer = answerLine(r, this.o.prices);
      const cost = answer === null ? "" : ` · ${answer}`;
      head = `${s.assistant("Assistant")}${typeof message?.model === "string" ? ` · ${scrubControl(message.model)}` : ""} · ${when}${s.dim(cost)}`;
    }
    if (flags.length > 0) head += ` · ${flags.join(", ")}`;
    return body.length === 0 ? `${head}\n  ${s.dim("(empty)")}` : `${head}\n${body.join("\n")}`;
  }

  /** One content block, indented; null when it is a tool result already shown under its call. */
  private block(b: Block, r: Rec): string | null {
    const s = this.o.style;
    switch (b.type) {
      case "text": {
        const text = String(b.text ?? "");
        if (isInjectedText(text)) {
          if (!this.o.full) return s.dim(`  ⚙ ${injectedSummary(text)}`);
          return injectedParts(text).map((p) => s.dim(`  ⚙ ${p.tag || "context"}`) + (p.inner === "" ? "" : `\n${indent(p.inner, "    ")}`)).join("\n");
        }
        if (!this.o.full && isCompactSummary(r)) return s.dim(`  ${oneLine(scrubControl(text), 160)} (--full shows the whole summary)`);
        return indent(scrubControl(text).trimEnd());
      }
      case "thinking": {
        const text = scrubControl(String(b.thinking ?? "")).trim();
        if (!this.o.full) return s.dim(`  ∴ thinking${text === "" ? " (not shown by the API)" : ` (${text.length} characters): ${oneLine(text, 100)}`}`);
        return `${s.dim("  ∴ thinking")}\n${indent(text, "    ")}`;
      }
      case "redacted_thinking":
        return s.dim("  ∴ (redacted thinking)");
      case "tool_use":
      case "server_tool_use":
      case "mcp_tool_use": {
        const lines = [`  ${s.tool("●")} ${s.bold(toolLine(b.name, b.input))}`];
        if (this.o.full) lines.push(indent(scrubControl(jsonText(b.input ?? {})), "    "));
        const result = typeof b.id === "string" ? this.results.get(b.id) : undefined;
        if (result !== undefined) {
          this.shown.add(String(b.id));
          lines.push(this.result(result));
        }
        return lines.join("\n");
      }
      case "tool_result": {
        if (typeof b.tool_use_id === "string" && this.shown.has(b.tool_use_id)) return null;
        return `  ${s.tool("●")} ${s.dim(`result of ${scrubControl(String(b.tool_use_id ?? "a tool call"))}`)}\n${this.result(b)}`;
      }
      case "image":
      case "document":
        return `  ${attachmentNote(b)}`;
      default:
        if (this.o.full) return `  [${String(b.type ?? "block")}]\n${indent(scrubControl(jsonText(b)), "    ")}`;
        return s.dim(`  [${scrubControl(String(b.type ?? "unknown"))} block]`);
    }
  }

  /** A tool result beneath its call: its first lines (all of them when `full`), marked as an error when it is one. */
  private result(b: Block): string {
    const s = this.o.style;
    const lines = scrubControl(resultText(b)).replace(/\n+$/, "").split("\n");
    const error = b.is_error === true ? "error: " : "";
    if (lines.length === 1 && lines[0] === "") return `    ⎿ ${s.dim(`${error}(no output)`)}`;
    const shown = this.o.full ? lines : lines.slice(0, RESULT_LINES);
    const more = lines.length - shown.length;
    const out = shown.map((l, i) => `${i === 0 ? "    ⎿ " : "      "}${i === 0 ? error : ""}${l}`.trimEnd());
    if (more > 0) out.push(s.dim(`      … ${plural(more, "more line")} (--full shows them)`));
    return out.join("\n");
  }
}

function compactionLine(r: Rec): string {
  return `──── ${compactionText(r)}${isCompactBoundary(r) ? "" : "; the summary below starts the compacted conversation"} ────`;
}
