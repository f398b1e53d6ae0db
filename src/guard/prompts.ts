/**
 * What the guard compares between the mirror and Claude Code's transcript: the prompts a person typed,
 * never whole records (docs/GUARD.md "What it compares, and why only that"), each held as a 64-bit hash of
 * its normalised text. Pure.
 */
import { COMPACTION_PREFIX, SUMMARY_INSTRUCTION_PREFIX } from "../protocol/classify.ts";
import { blocksOf, isInjectedText, type Rec } from "../transcript/records.ts";
import { isObject } from "../protocol/json.ts";

/** A prompt's text as compared: surrounding whitespace dropped, line endings unified. */
export function normalisePrompt(text: string): string {
  return text.replace(/\r\n?/g, "\n").trim();
}

/** A short, stable key of a normalised prompt (FNV-1a over two 32-bit lanes, as 16 hex digits). */
export function promptKey(text: string): string {
  const s = normalisePrompt(text);
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}

/** True for text a person could have typed: not empty, not a tag Claude Code wraps its own content in, not a summary or summary request. */
function typedText(text: string): boolean {
  const t = text.trim();
  return t !== "" && !t.startsWith("<") && !isInjectedText(t) && !t.startsWith(COMPACTION_PREFIX) && !t.startsWith(SUMMARY_INSTRUCTION_PREFIX);
}

/**
 * The texts of a request's last user message that may be what the person typed (each text block that is
 * not Claude Code's injected context), or [] when that message is tool results or has no such text. One
 * of them is the typed prompt; the others (hook output, pasted context) are harmless candidates, since a
 * prompt counts as recorded when any of its candidates is.
 */
export function promptCandidates(messages: readonly { role: string; content: unknown }[]): string[] {
  let last: { role: string; content: unknown } | undefined;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "user") {
      last = messages[i];
      break;
    }
    if (messages[i].role === "assistant") return []; // the request continues an answer: no new prompt
  }
  if (last === undefined) return [];
  const blocks = blocksOf(last.content);
  if (blocks.some((b) => b.type === "tool_result")) return [];
  return blocks.filter((b) => b.type === "text" && typeof b.text === "string" && typedText(b.text)).map((b) => normalisePrompt(b.text as string));
}

/**
 * The prompt keys one record of Claude Code's transcript holds: every text of a user record (a plain
 * string or its text blocks), a queued prompt (`queue-operation` content, a `queued_command` attachment).
 */
export function transcriptPromptKeys(r: Rec): string[] {
  const texts: string[] = [];
  if (r.type === "user" && isObject(r.message)) {
    for (const b of blocksOf(r.message.content)) if (b.type === "text" && typeof b.text === "string") texts.push(b.text);
  } else if (r.type === "queue-operation" && typeof r.content === "string") {
    texts.push(r.content);
  } else if (r.type === "attachment" && isObject(r.attachment) && r.attachment.type === "queued_command") {
    const a = r.attachment;
    for (const value of [a.prompt, a.content]) {
      if (typeof value === "string") texts.push(value);
      else for (const b of blocksOf(value)) if (typeof b.text === "string") texts.push(b.text);
    }
  }
  return texts.filter((t) => t.trim() !== "").map(promptKey);
}

/** The typed prompts of the mirror's main-conversation records (user records the tap saw live, not rebuilt from history). */
export function mirroredPrompts(records: readonly Rec[]): { uuid: string; candidates: string[] }[] {
  const out: { uuid: string; candidates: string[] }[] = [];
  for (const r of records) {
    if (r.type !== "user" || r.reconstructed === true || r.isSidechain === true || r.isCompactSummary === true || !isObject(r.message)) continue;
    const candidates = promptCandidates([{ role: "user", content: r.message.content }]);
    if (candidates.length > 0) out.push({ uuid: String(r.uuid ?? ""), candidates });
  }
  return out;
}
