/** A session in one of the export formats (`sessiontap export`, the viewer's download links). Pure. */
import { compactJson } from "./json-text.ts";
import type { Rec } from "./records.ts";
import { renderHtmlDocument } from "./render-html.ts";
import { renderMarkdown } from "./render-md.ts";
import type { SessionSummary } from "./summary.ts";
import { outline, type Tree } from "./tree.ts";
import { type PriceTable } from "../usage/prices.ts";
import { terminalSafeJson } from "./control-chars.ts";

/** The export formats. */
export type ExportFormat = "md" | "html" | "jsonl";

/**
 * `jsonl`: every record of the main conversation, in file order, one per line (the raw records);
 * `md`/`html`: the conversation for people, every record once in reading order (see tree.ts `outline`).
 */
export function exportText(session: { records: Rec[]; tree: Tree; summary: SessionSummary }, format: ExportFormat, prices?: PriceTable): string {
  // Escaped, not changed: each line is the same JSON value, with nothing raw a terminal would act on.
  if (format === "jsonl") return session.records.map((r) => terminalSafeJson(compactJson(r)) + "\n").join("");
  const items = outline(session.tree);
  return format === "html" ? renderHtmlDocument(session.summary, items, prices) : renderMarkdown(session.summary, items, prices);
}
