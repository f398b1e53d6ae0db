// The one judge of Claude Code's own transcript against the mirror (docs/DESIGN.md "One judge of Claude Code's transcript"). Pure.
import { COMPACTION_PREFIX, SUMMARY_INSTRUCTION_PREFIX } from "../protocol/classify.ts";
import { isObject, jsonObject } from "../protocol/json.ts";
import { blocksOf, isConversation, isInjectedText, messageOf, type Rec, timeOf } from "./records.ts";
import { restorePath, type Tree } from "./tree.ts";
import { plural } from "../utils/describe-error.ts";

export type TranscriptState = "missing" | "stub" | "behind" | "intact";

/** Claude Code writes on its own schedule: a prompt or answer younger than this is not lacking yet. */
const SETTLE_MS = 1500;

/** `whole`: read from its first byte; `keys`: every text of its user records and queued prompts, and its answers' ids; `own`: its
 * typed prompts and answers; `unread`: conversation lines too long to read; `torn`: its last line unfinished or not a JSON object. */
export interface FileFacts {
  whole: boolean;
  conversation: boolean;
  records: number;
  keys: Set<string>;
  own: Set<string>;
  unread: number;
  torn: boolean;
}

/** `expected`: what the file should hold (the current branch); `holds`: all the mirror holds (null: not known). */
export type MirrorFacts = { expected: { keys: string[]; at: number; answer: boolean }[]; holds: Set<string> | null };

export type Verdict = { state: TranscriptState; lacking: { prompts: number; answers: number }; extra: number };

/** What every reader says after "Claude Code's transcript". */
export const TRANSCRIPT_IS: Record<TranscriptState, string> = { missing: "is gone", stub: "is a stub", behind: "is behind the mirror", intact: "is intact" };

export function lackingWords(l: Verdict["lacking"]): string {
  return [l.prompts > 0 ? plural(l.prompts, "prompt") : "", l.answers > 0 ? plural(l.answers, "answer") : ""].filter(Boolean).join(" and ") || "nothing";
}

export function stateWords(v: Verdict): string {
  return v.state === "behind" ? `behind (lacks ${lackingWords(v.lacking)} of the mirror's current branch)` : v.state;
}

const normalisePrompt = (text: string) => text.replace(/\r\n?/g, "\n").trim();

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

function typedText(text: string): boolean {
  const t = text.trim();
  return t !== "" && !t.startsWith("<") && !isInjectedText(t) && !t.startsWith(COMPACTION_PREFIX) && !t.startsWith(SUMMARY_INSTRUCTION_PREFIX);
}

/** The texts of a request's last user message that may be what the person typed; a hook's untagged text beside it is a harmless extra. */
export function promptCandidates(messages: readonly { role: string; content: unknown }[]): string[] {
  const last = messages.findLast((m) => m.role === "user" || m.role === "assistant");
  if (last?.role !== "user") return [];
  const blocks = blocksOf(last.content);
  if (blocks.some((b) => b.type === "tool_result")) return [];
  return blocks.filter((b) => b.type === "text" && typeof b.text === "string" && typedText(b.text)).map((b) => normalisePrompt(b.text as string));
}

export const answerKey = (id: string) => `a:${id}`;

const textsOf = (content: unknown) => blocksOf(content).flatMap((b) => (typeof b.text === "string" ? [b.text] : []));

function keysOf(r: Rec): { all: string[]; typed: string[] } {
  const message = messageOf(r);
  if (r.type === "user" && message !== null) {
    return { all: textsOf(message.content).map(promptKey), typed: promptCandidates([{ role: "user", content: message.content }]).map(promptKey) };
  }
  const id = r.type === "assistant" ? message?.id : undefined;
  return typeof id === "string" && id !== "" ? { all: [answerKey(id)], typed: [answerKey(id)] } : { all: [], typed: [] };
}

export const newFileFacts = (whole = true): FileFacts => ({ whole, conversation: false, records: 0, keys: new Set(), own: new Set(), unread: 0, torn: false });

const decoder = new TextDecoder();

/** Lines that cannot hold a prompt or an answer are told by their `"type":"…"` pair (unescaped only as a key and value) and not parsed. */
export function noteLine(f: FileFacts, bytes: Uint8Array, oversized: boolean, last = false): void {
  const text = decoder.decode(bytes);
  if (!oversized && text.trim() === "") return;
  const conversation = text.includes('"type":"user"') || text.includes('"type":"assistant"');
  if (oversized) {
    f.torn = false;
    if (!conversation) return;
    f.conversation = true;
    f.records++;
    if (!/"tool_use_id"|"tool_result"/.test(text)) f.unread++;
    return;
  }
  if (!conversation && !text.includes('"type":"queue-operation"') && !text.includes('"queued_command"')) {
    const t = text.trim();
    f.torn = last || !t.startsWith("{") || !t.endsWith("}");
    return;
  }
  const r = jsonObject(text);
  f.torn = last || r === null;
  if (r === null) return;
  if (isConversation(r)) {
    f.conversation = true;
    f.records++;
  }
  const { all, typed } = keysOf(r);
  for (const k of all) f.keys.add(k);
  for (const k of typed) f.own.add(k);
  if (r.type === "queue-operation" && typeof r.content === "string") {
    f.keys.add(promptKey(r.content));
  } else if (r.type === "attachment" && isObject(r.attachment) && r.attachment.type === "queued_command") {
    for (const v of [r.attachment.prompt, r.attachment.content]) for (const t of typeof v === "string" ? [v] : textsOf(v)) f.keys.add(promptKey(t));
  }
}

export function mirrorFacts(tree: Tree, others: Rec[] = []): MirrorFacts {
  const expected = new Map<string, MirrorFacts["expected"][number]>();
  for (const r of restorePath(tree)) {
    if (r.reconstructed === true || r.isSidechain === true || r.isCompactSummary === true || messageOf(r)?.stop_reason === "interrupted") continue;
    const keys = keysOf(r).typed;
    if (keys.length > 0) expected.set(keys.join(" "), { keys, at: timeOf(r), answer: r.type === "assistant" });
  }
  return { expected: [...expected.values()], holds: new Set([...tree.nodes, ...others].flatMap((r) => keysOf(r).all)) };
}

/** Items younger than `settleMs`, or noted before `since` (a file first read from a tail window), are not lacking. */
export function judge(file: FileFacts | null, mirror: MirrorFacts, o: { now?: number; settleMs?: number; since?: number } = {}): Verdict {
  const lacking = { prompts: 0, answers: 0 };
  if (file === null) return { state: "missing", lacking, extra: 0 };
  const now = o.now ?? Number.POSITIVE_INFINITY;
  for (const e of mirror.expected) {
    if (now - e.at < (o.settleMs ?? SETTLE_MS) || e.at < (o.since ?? Number.NEGATIVE_INFINITY)) continue;
    if (!e.keys.some((k) => file.keys.has(k))) lacking[e.answer ? "answers" : "prompts"]++;
  }
  const unseen = Math.min(file.unread, lacking.prompts);
  lacking.prompts -= unseen;
  lacking.answers = Math.max(0, lacking.answers - (file.unread - unseen));
  const extra = mirror.holds === null ? 0 : [...file.own].filter((k) => !mirror.holds!.has(k)).length;
  const state = file.whole && !file.conversation ? "stub" : lacking.prompts + lacking.answers > 0 && extra === 0 ? "behind" : "intact";
  return { state, lacking, extra };
}
