// The transcript `restore` writes, the current branch in Claude Code's own record shape (docs/DESIGN.md "Restore"), and the drill's
// check that Claude Code resumed it whole (docs/DESIGN.md "Drill"). Pure.
import { uuidFrom } from "../protocol/lineage.ts";
import { isObject } from "../protocol/json.ts";
import { type ContextPiece, contextPiece, interleave, reminderInner, systemPieces, UNKNOWN_KIND } from "./context-kinds.ts";
import {
  type Block,
  blocksOf,
  isApiSystem,
  isCompactBoundary,
  isConversation,
  isInjectedText,
  isTypedPrompt,
  messageOf,
  oneLine,
  parentOf,
  promptText,
  type Rec,
  uuidOf,
} from "./records.ts";
import { restorePath, type Tree } from "./tree.ts";

/** Compactions as Claude Code records them, each parent re-linked to the nearest kept record (Claude Code resumes from a break only). */
export function planRestore(tree: Tree, target: { sessionId: string; cwd: string; agentId?: string }): { records: Rec[]; leafUuid: string | null } {
  const path = restorePath(tree);
  const records: Rec[] = [];
  const keptBefore = new Map<string, string | null>();
  let previous: string | null = null;
  const envelope = { isSidechain: target.agentId !== undefined, sessionId: target.sessionId, cwd: target.cwd };
  for (const r of path) {
    const id = uuidOf(r)!;
    if (isCompactBoundary(r)) {
      records.push({ ...r, ...envelope, parentUuid: null, logicalParentUuid: previous });
      previous = id;
    } else if (isConversation(r) || isApiSystem(r)) {
      const message = apiSafeMessage(messageOf(r)!);
      // An answer cut off before its first block is left out: the API refuses an empty message.
      if (!Array.isArray(message.content) || message.content.length > 0) {
        const own: Rec = { ...r, ...envelope, parentUuid: parentOf(r) === null ? null : previous, message };
        if (target.agentId === undefined) delete own.agentId;
        else own.agentId = target.agentId;
        records.push(own);
        previous = id;
      }
    }
    keptBefore.set(id, previous);
  }
  const ids = path.map((r) => uuidOf(r)!);
  const kept = new Set(records.map((r) => uuidOf(r)!));
  const { out, first, last } = toClaudeRecords(records);
  const at = (map: Map<string, string>, id: string) => map.get(id) ?? id;
  for (const r of out) {
    if (typeof r.logicalParentUuid === "string") r.logicalParentUuid = at(last, r.logicalParentUuid);
    const meta = isObject(r.compactMetadata) ? r.compactMetadata : null;
    if (meta === null || !isObject(meta.preservedSegment)) continue;
    // The kept segment: its head at or after the one the mirror names, its tail at or before, as written; else it is dropped.
    const { preservedSegment: segment, preservedMessages: _list, ...rest } = meta;
    const head = typeof segment.headUuid === "string" ? ids.indexOf(segment.headUuid) : -1;
    const headUuid = head < 0 ? undefined : ids.slice(head).find((id) => kept.has(id));
    const tailUuid = typeof segment.tailUuid === "string" ? keptBefore.get(segment.tailUuid) : undefined;
    const anchorUuid = typeof segment.anchorUuid === "string" && kept.has(segment.anchorUuid) ? segment.anchorUuid : undefined;
    const ends = headUuid && tailUuid && anchorUuid ? { headUuid: at(first, headUuid), tailUuid: at(last, tailUuid), anchorUuid: at(last, anchorUuid) } : null;
    r.compactMetadata = ends === null ? rest : { ...rest, preservedSegment: { ...segment, ...ends } };
  }
  return { records: out, leafUuid: out.length === 0 ? null : uuidOf(out[out.length - 1]) };
}

export function lastPromptRecord(sessionId: string, records: Rec[]): Rec | null {
  const typed = records.findLast(isTypedPrompt);
  const leaf = records.findLast(isConversation);
  if (typed === undefined || leaf === undefined) return null;
  const line = promptText(typed).replaceAll("\n", " ").trim();
  return { type: "last-prompt", lastPrompt: line.length > 200 ? line.slice(0, 200).trim() + "…" : line, leafUuid: uuidOf(leaf), sessionId };
}

/** A message the API accepts when Claude Code re-sends it: no `sessiontap_*` keys, a reference kept without its bytes as a text note. */
function apiSafeMessage(message: Record<string, unknown>): Record<string, unknown> {
  const out = Object.fromEntries(Object.entries(message).filter(([k]) => !k.startsWith("sessiontap_")));
  if (Array.isArray(out.content)) out.content = out.content.map((b) => (isObject(b) ? apiSafeMessage(restored(b)) : b));
  return out;
}

function restored(block: Block): Block {
  const source = block.source;
  if (!isObject(source) || source.type !== "reference") return block;
  const kind = typeof block.type === "string" ? block.type : "attachment";
  const media = typeof source.media_type === "string" ? ` ${source.media_type}` : "";
  const sha = typeof source.sha256 === "string" ? `, sha256 ${source.sha256}` : "";
  return { type: "text", text: `[${kind}${media} not kept by sessiontap${sha}]` };
}

const COMMAND_RECORD = /^<(local-command-caveat|command-name|command-message|local-command-stdout|local-command-stderr)>/;
const HIDDEN = /^<local-command-caveat>/;
const TRAILING_REMINDER = /\n\n(<system-reminder>\n(?:(?!<\/system-reminder>)[\s\S])*\n<\/system-reminder>)$/;

/** One mirrored message as records before it, its own (the first keeps its uuid), and context pieces after them. */
type Split = { before: Rec[]; records: Rec[]; pieces: ContextPiece[] };

function splitPrompt(r: Rec, content: unknown[]): Split | null {
  const blocks = content.filter(isObject) as Block[];
  if (blocks.length !== content.length) return null;
  const before: Rec[] = [];
  const pieces: ContextPiece[] = [];
  let n = 0;
  for (; n < blocks.length; n++) {
    const text = blocks[n].type === "text" && typeof blocks[n].text === "string" ? (blocks[n].text as string).replace(/\n$/, "") : null;
    if (text === null) break;
    const inner = reminderInner(text);
    if (inner !== null) pieces.push(contextPiece(inner, "user"));
    else if (COMMAND_RECORD.test(text)) before.push(commandRecord(r, n, text));
    else break;
  }
  if (n === blocks.length) return null; // nothing typed after it: the message stays as it was
  return { before, records: [{ ...r, message: { ...messageOf(r), content: typedContent(blocks.slice(n)) } }], pieces };
}

function commandRecord(r: Rec, i: number, text: string): Rec {
  const piece: Rec = { ...r, uuid: uuidFrom(`${uuidOf(r)}:injected:${i}`), message: { ...messageOf(r), content: [{ type: "text", text }] } };
  if (HIDDEN.test(text)) piece.isMeta = true;
  return piece;
}

/** A typed prompt is a plain string in Claude Code's record; it sends it as a text block only where it must (merged, or carrying a cache marker). */
function typedContent(blocks: Block[]): unknown {
  const only = blocks.length === 1 ? blocks[0] : null;
  return only !== null && only.type === "text" && typeof only.text === "string" && Object.keys(only).every((k) => k === "type" || k === "text")
    ? only.text
    : blocks;
}

/** One record per tool result, with what the tool returned where the result says it; reminders appended to a result or beside it become pieces. */
function splitToolResults(r: Rec, content: unknown[], tools: Map<string, string>): Split {
  const pieces: ContextPiece[] = [];
  const kept: unknown[] = [];
  for (const b of content) {
    if (isObject(b) && b.type === "tool_result") {
      let text = typeof b.content === "string" ? b.content : null;
      const trailing: ContextPiece[] = [];
      for (let m = text === null ? null : TRAILING_REMINDER.exec(text); m !== null; m = TRAILING_REMINDER.exec(text!)) {
        const piece = contextPiece(reminderInner(m[1])!, "user");
        if (piece.attachment.type === UNKNOWN_KIND) break; // a tool's own reminder: part of its output
        trailing.unshift(piece);
        text = text!.slice(0, m.index);
      }
      pieces.push(...trailing);
      kept.push(text === null || text === b.content ? b : { ...b, content: text });
    } else if (isObject(b) && b.type === "text" && typeof b.text === "string" && reminderInner(b.text.replace(/\n$/, "")) !== null) {
      pieces.push(contextPiece(reminderInner(b.text.replace(/\n$/, ""))!, "user"));
    } else kept.push(b);
  }
  const id = uuidOf(r)!;
  const onlyResults = kept.every((b) => isObject(b) && b.type === "tool_result");
  const groups = onlyResults ? kept.map((b) => [b as Block]) : [kept as Block[]];
  const records = groups.map((blocks, i) => {
    const own: Rec = { ...r, uuid: i === 0 ? id : uuidFrom(`${id}:result:${i}`), message: { ...messageOf(r), content: blocks } };
    const results = blocks.filter((b) => isObject(b) && b.type === "tool_result");
    const result = results.length === 1 ? toolUseResultOf(tools.get(String(results[0].tool_use_id)), results[0]) : undefined;
    if (result !== undefined) own.toolUseResult = result;
    return own;
  });
  return { before: [], records, pieces };
}

const systemMessagePieces = (r: Rec) => blocksOf(messageOf(r)?.content).map((b) => String(b.text ?? "")).filter((t) => t !== "").flatMap(systemPieces);

function attachmentRecord(from: Rec, uuid: string, piece: ContextPiece): Rec {
  const { message: _m, type: _t, subtype: _s, uuid: _u, isMeta: _i, toolUseResult: _r, isCompactSummary: _c, ...envelope } = from;
  const out: Rec = {
    ...envelope,
    attachment: piece.attachment,
    type: "attachment",
    uuid,
    rendered: [{ content: piece.rendered }],
    renderedRole: piece.renderedRole,
  };
  return piece.besideToolResult ? { ...out, renderedBesideToolResult: true } : out;
}

function splitOf(r: Rec, tools: Map<string, string>): Split | null {
  const content = messageOf(r)?.content;
  if (r.type !== "user" || !Array.isArray(content) || r.isCompactSummary === true) return null;
  return content.some((b) => isObject(b) && b.type === "tool_result") ? splitToolResults(r, content, tools) : splitPrompt(r, content);
}

/** The user message (parent or child) a system message came with: Claude Code keeps its pieces as that turn's attachments. */
function hostOf(records: Rec[], i: number): string | null {
  const [r, before, after] = [records[i], records[i - 1], records[i + 1]];
  if (r === undefined || !isApiSystem(r) || uuidOf(r) === null) return null;
  if (before?.type === "user" && parentOf(r) === uuidOf(before)) return uuidOf(before);
  return after?.type === "user" && parentOf(after) === uuidOf(r) ? uuidOf(after) : null;
}

/** Command pieces, the prompt, then the turn's context as attachments; `first` and `last`: a split message's first and last records. */
function toClaudeRecords(records: Rec[]): { out: Rec[]; first: Map<string, string>; last: Map<string, string> } {
  const out: Rec[] = [];
  const first = new Map<string, string>();
  const last = new Map<string, string>();
  const tools = new Map<string, string>();
  const tip = () => (out.length === 0 ? null : String(out[out.length - 1].uuid));
  const emit = (from: Rec, pieces: ContextPiece[]) => {
    const id = uuidOf(from)!;
    pieces.forEach((p, i) => out.push({ ...attachmentRecord(from, uuidFrom(`${id}:context:${i}`), p), parentUuid: tip() }));
    last.set(id, tip()!);
  };
  for (const [i, r] of records.entries()) {
    const id = uuidOf(r);
    const parent = parentOf(r);
    const relinked: Rec = parent !== null && last.has(parent) ? { ...r, parentUuid: last.get(parent) } : r;
    if (id !== null && isApiSystem(r)) {
      const host = hostOf(records, i);
      if (host !== null) last.set(id, last.get(host) ?? tip() ?? ""); // written with its host
      else emit({ ...relinked, parentUuid: tip() }, systemMessagePieces(r));
      continue;
    }
    if (r.type === "assistant") {
      for (const b of blocksOf(messageOf(r)?.content)) if (b.type === "tool_use") tools.set(String(b.id), String(b.name));
    }
    const guests = id === null ? [] : [i - 1, i + 1].filter((j) => hostOf(records, j) === id).map((j) => records[j]);
    const split = id === null || isCompactBoundary(r) ? null : splitOf(relinked, tools);
    if (split === null && guests.length === 0) {
      out.push(relinked);
      continue;
    }
    const own = split?.records ?? [relinked];
    let parentUuid = parentOf(relinked);
    for (const record of [...(split?.before ?? []), ...own]) {
      out.push({ ...record, parentUuid });
      parentUuid = record.uuid as string;
    }
    if (split !== null && split.before.length > 0) first.set(id!, split.before[0].uuid as string);
    emit({ ...own[0], uuid: id }, interleave(split?.pieces ?? [], guests.flatMap(systemMessagePieces)));
    for (const guest of guests) last.set(uuidOf(guest)!, last.get(id!)!);
  }
  return { out, first, last };
}

/** What a resumed screen shows of a Bash result that says all of it; other tools show their call. */
function toolUseResultOf(tool: string | undefined, result: Block): unknown {
  const c = result.content;
  const texts = typeof c === "string"
    ? [c]
    : Array.isArray(c) && c.every((b) => isObject(b) && b.type === "text" && typeof b.text === "string")
    ? c.map((b) => b.text)
    : null;
  if (tool !== "Bash" || result.is_error === true || texts === null) return undefined;
  return { stdout: texts.join("\n"), stderr: "", interrupted: false, isImage: false, noOutputExpected: false };
}

type Said = { kind: string; key: string; where: string; alone?: boolean };

export type DrillVerdict = { ok: boolean; detail: string; turns: number; compactedFirst: boolean };

/** A tool result's content: text blocks and a string say the same, less the reminders some models get appended; anything else compares as JSON. */
function resultKey(content: unknown): string {
  const blocks = blocksOf(content).map(restored);
  if (!blocks.every((b) => b.type === "text")) return JSON.stringify(blocks);
  let text = blocks.map((b) => b.text).join("\n");
  while (TRAILING_REMINDER.test(text)) text = text.replace(TRAILING_REMINDER, "");
  return text;
}

function saidIn(role: unknown, content: unknown, where: string): Said[] {
  const out: Said[] = [];
  for (const b of blocksOf(content).map(restored)) {
    if (b.type === "text" && typeof b.text === "string" && !isInjectedText(b.text) && b.text.trim() !== "") {
      out.push({ kind: role === "user" ? "prompt" : "answer", key: b.text.trimEnd(), where }); // merged messages gain a "\n"
    } else if (b.type === "tool_use") out.push({ kind: "tool call", key: `${b.id} ${b.name} ${JSON.stringify(b.input)}`, where });
    else if (b.type === "tool_result") out.push({ kind: "tool result", key: `${b.tool_use_id} ${resultKey(b.content)}`, where });
    else if (b.type === "image" || b.type === "document") out.push({ kind: b.type, key: b.type, where });
  }
  return out;
}

const shown = (x: Said) => `${x.kind} ${x.where}: ${JSON.stringify(oneLine(x.kind.startsWith("tool") ? x.key.slice(x.key.indexOf(" ") + 1) : x.key, 80))}`;

/** Item by item; Claude Code may add the probe (or its compaction instruction), an error result for a call without one, a lone filler answer. */
export function compareResume(branch: Rec[], messages: unknown[], probe: string): DrillVerdict {
  let turns = 0;
  const want = branch.filter((r) => r.type === "user" || r.type === "assistant").flatMap((r) => {
    const items = saidIn(r.type, messageOf(r)?.content, "");
    if (items.some((x) => x.kind === "prompt")) turns++;
    return items.map((x) => ({ ...x, where: `from record ${uuidOf(r)}, turn ${turns}` }));
  });
  const got = messages.flatMap((m, i) => {
    const items = isObject(m) && m.role !== "system" ? saidIn(m.role, m.content, `in message ${i + 1} of the resumed request`) : [];
    return items.map((x) => ({ ...x, alone: items.length === 1 }));
  });
  const last = got.at(-1);
  const compactedFirst = last?.kind === "prompt" && last.key.startsWith("CRITICAL: Respond with TEXT ONLY");
  if (last?.kind === "prompt" && (last.key === probe || compactedFirst)) got.pop();
  const answered = new Set(want.filter((x) => x.kind === "tool result").map((x) => x.key.split(" ")[0]));
  const verdict = (ok: boolean, detail: string): DrillVerdict => ({ ok, detail, turns, compactedFirst });
  for (let i = 0, j = 0; i < want.length || j < got.length;) {
    const w = want[i] as Said | undefined;
    const g = got[j] as Said | undefined;
    if (w !== undefined && g !== undefined && w.kind === g.kind && w.key === g.key) {
      i++, j++;
    } else if (
      g !== undefined && ((g.kind === "tool result" && !answered.has(g.key.split(" ")[0])) || (g.kind === "answer" && g.alone && w?.kind !== "answer"))
    ) {
      j++;
    } else if (g === undefined || (w !== undefined && want.slice(i).some((x) => x.kind === g.kind && x.key === g.key))) {
      return verdict(false, `missing ${shown(w!)}`);
    } else if (w === undefined) return verdict(false, `extra ${shown(g)}`);
    else if (w.kind === g.kind) return verdict(false, `missing ${shown(w)} (Claude Code sent instead: ${shown(g)})`);
    else return verdict(false, `extra ${shown(g)} (where the mirror has ${shown(w)})`);
  }
  return verdict(true, `${want.length} items resumed in order${compactedFirst ? " (Claude Code compacted the conversation first)" : ""}`);
}
