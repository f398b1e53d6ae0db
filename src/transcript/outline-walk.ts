/**
 * The one walk every renderer of an outline shares (Markdown, HTML, the terminal): items in order, each
 * record told whether it continues the message before it, which only holds when nothing came between.
 * Pure.
 */
import { continuesMessage, type Rec } from "./records.ts";
import type { Item } from "./tree.ts";

/** The branches item of an outline. */
export type BranchesItem = Extract<Item, { kind: "branches" }>;

/** What one renderer makes of each kind of item. */
export interface OutlineRenderer {
  /** A record's output, or null when it shows nothing (a tool result shown under its call). */
  record(record: Rec, continued: boolean): string | null;
  /** The mark of a compaction. */
  compaction(record: Rec): string;
  /** The other branches forking here, each already rendered by the caller's own recursion. */
  branches(item: BranchesItem): string[];
}

/** The outputs of an outline's items, in order. */
export function renderOutline(items: Item[], renderer: OutlineRenderer): string[] {
  const out: string[] = [];
  let previous: Rec | null = null;
  for (const item of items) {
    if (item.kind === "record") {
      const text = renderer.record(item.record, continuesMessage(previous, item.record));
      if (text !== null) out.push(text);
      previous = item.record;
    } else {
      out.push(...(item.kind === "compaction" ? [renderer.compaction(item.record)] : renderer.branches(item)));
      previous = null;
    }
  }
  return out;
}
