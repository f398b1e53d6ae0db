/**
 * Reading transcript records back: JSONL text → records, and the small questions every reader asks of a
 * record (is it conversation, what are its blocks, what does it say). Pure. Handles the mirror's records
 * (one per API message) and Claude Code's own (one per content block, metadata records in between).
 */
import { COMPACTION_PREFIX } from "../protocol/classify.ts";
import { compactJson } from "./json-text.ts";
import { scrubControl } from "./control-chars.ts";
import { isObject } from "../protocol/json.ts";

/** Shared with the protocol code, so the tap and the readers agree. */
export { COMPACTION_PREFIX };

/** One JSON object of a transcript or mirror file. */
export type Rec = Record<string, unknown>;

/** A content block (text, tool_use, tool_result, thinking, image, …), as stored. */
export type Block = Record<string, unknown>;

/** True for a user or assistant record: the conversation itself, what Claude Code can resume. */
export function isConversation(r: Rec): boolean {
  return (r.type === "user" || r.type === "assistant") && isObject(r.message);
}

/** True for the mirror's record of a `role:"system"` API message (environment context, not conversation). */
export function isApiSystem(r: Rec): boolean {
  return r.type === "system" && r.subtype === "api_message";
}

/** True for Claude Code's compaction marker record. */
export function isCompactBoundary(r: Rec): boolean {
  return r.type === "system" && r.subtype === "compact_boundary";
}

/** True for the user record that carries a compaction's summary (Claude Code's flag, or its opening words). */
export function isCompactSummary(r: Rec): boolean {
  if (r.type !== "user") return false;
  if (r.isCompactSummary === true) return true;
  const first = blocksOf(messageOf(r)?.content).find((b) => b.type === "text");
  return typeof first?.text === "string" && first.text.trimStart().startsWith(COMPACTION_PREFIX);
}

/** The record's `message` object, or null. */
export function messageOf(r: Rec): { role?: unknown; content?: unknown; [k: string]: unknown } | null {
  return isObject(r.message) ? r.message : null;
}

/** A message's content as a block list (a plain string is one text block). */
export function blocksOf(content: unknown): Block[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (Array.isArray(content)) return content.filter(isObject);
  return [];
}

/** The record's uuid, or null. */
export function uuidOf(r: Rec): string | null {
  return typeof r.uuid === "string" && r.uuid !== "" ? r.uuid : null;
}

/** The record's parent uuid, or null for a root. */
export function parentOf(r: Rec): string | null {
  return typeof r.parentUuid === "string" && r.parentUuid !== "" ? r.parentUuid : null;
}

/** The record's time in ms since the epoch, or NaN. */
export function timeOf(r: Rec): number {
  return typeof r.timestamp === "string" ? Date.parse(r.timestamp) : Number.NaN;
}

/** True when a user record only carries tool results (the answer to a tool call, not a prompt). */
export function isToolResultOnly(r: Rec): boolean {
  const blocks = blocksOf(messageOf(r)?.content);
  return blocks.length > 0 && blocks.every((b) => b.type === "tool_result");
}

/** Claude Code's reminders and command wrappers: context it adds to a prompt, not what the user typed. */
const INJECTED = /^\s*<(system-reminder|local-command-caveat|local-command-stdout|command-name|command-message|command-args)>/;

/** True for a text block Claude Code added to a prompt (a reminder, a command wrapper). */
export function isInjectedText(text: string): boolean {
  return INJECTED.test(text);
}

/** The text a person typed into a user record: its text blocks, less Claude Code's injected reminders. */
export function promptText(r: Rec): string {
  return blocksOf(messageOf(r)?.content)
    .filter((b) => b.type === "text" && typeof b.text === "string" && !INJECTED.test(b.text))
    .map((b) => b.text as string)
    .join("\n")
    .trim();
}

/**
 * The first prompt a person typed in `records` (file order), as one line of at most `max` characters and
 * without control characters: it is a title wherever one is shown (a list row, a search hit, a heading).
 */
export function firstPrompt(records: Rec[], max = 200): string | null {
  for (const r of records) {
    if (r.type !== "user" || r.isMeta === true || isToolResultOnly(r) || isCompactSummary(r)) continue;
    const text = promptText(r);
    if (text !== "") return oneLine(scrubControl(text), max);
  }
  return null;
}

/** Collapses whitespace to single spaces and cuts at `max` characters with an ellipsis. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : flat.slice(0, max - 1) + "…";
}

/**
 * Every searchable string of a record: texts, thinking, tool names and inputs, tool results. Claude Code's
 * injected reminders and command wrappers are left out: they repeat in every session and would match
 * nearly any query.
 */
export function searchableText(r: Rec): string {
  const out: string[] = [];
  const walk = (blocks: Block[]) => {
    for (const b of blocks) {
      if (typeof b.text === "string" && !(b.type === "text" && INJECTED.test(b.text))) out.push(b.text);
      if (typeof b.thinking === "string") out.push(b.thinking);
      if (typeof b.name === "string") out.push(b.name);
      if (b.input !== undefined) out.push(compactJson(b.input));
      if (b.type === "tool_result") walk(blocksOf(b.content));
    }
  };
  walk(blocksOf(messageOf(r)?.content));
  if (typeof r.content === "string") out.push(r.content); // a system record's own text
  return out.join("\n");
}

/** True when `r` is a further block of `previous`'s assistant message (Claude Code writes one record per block). */
export function continuesMessage(previous: Rec | null, r: Rec): boolean {
  const a = previous === null ? null : messageOf(previous);
  const b = messageOf(r);
  return previous?.type === "assistant" && r.type === "assistant" && typeof a?.id === "string" && a.id === b?.id;
}
