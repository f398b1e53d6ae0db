/**
 * The transcript `sessiontap restore` writes: what Claude Code can resume, in Claude Code's own shape.
 * Pure.
 *
 * - The current branch only: from the newest leaf up by `parentUuid`, so a rewound or retried exchange
 *   does not come back as a second answer.
 * - A compaction is kept as Claude Code records it: the `compact_boundary` root, its summary and what
 *   follows, and before it (through the boundary's `logicalParentUuid`) the conversation it compacted.
 *   Claude Code loads from the newest leaf up to the boundary and splices in the kept tail the boundary
 *   names (`compactMetadata.preservedSegment`), so the resumed history is the compacted one it last sent.
 *   A compaction summary without a boundary (an older mirror) starts the branch: nothing before it.
 * - Only user and assistant records besides the boundary. The mirror's `system`/`api_message` records
 *   (environment context Claude Code rebuilds itself) and any other metadata record are left out, and each
 *   kept record's `parentUuid` (a boundary's `logicalParentUuid`, a segment's head and tail) is re-linked
 *   to the nearest kept record, so the file holds only record types Claude Code writes itself. Checked
 *   with the real CLI 2.1.328: it resumes the whole conversation from such a file; where the environment
 *   context first sat it re-sends an empty `role:"system"` message, with or without our `system` records
 *   in the file (it does the same from its own transcript after a compaction); with a parent missing from
 *   the file it resumes from the break only, which is why the re-linking matters.
 * - `sessionId` is the session's, `cwd` the target's (with `--cwd`), `isSidechain` false; for a subagent's
 *   conversation (written to `<session>/subagents/agent-<id>.jsonl`) `isSidechain` true and its `agentId`.
 * - Injected context (reminders, a slash command's caveat and output) is split off each prompt into
 *   records of its own, as Claude Code records it (transcript/injected-context.ts): `claude --resume` shows
 *   the typed prompt, and the model is sent the same message as before.
 * - Content the API would refuse on the resumed request is made acceptable: an image or document the
 *   mirror kept only as a sha256 reference becomes a text note saying what was there, the mirror's own
 *   bookkeeping keys (`sessiontap_*`) are dropped, and an answer cut off before its first block is left out.
 */
import { toClaudeRecords } from "./injected-context.ts";
import {
  type Block,
  isApiSystem,
  isCompactBoundary,
  isCompactSummary,
  isConversation,
  isToolResultOnly,
  messageOf,
  parentOf,
  promptText,
  type Rec,
  uuidOf,
} from "./records.ts";
import type { Tree } from "./tree.ts";
import { isObject } from "../protocol/json.ts";

/** What to write, and what was left out. */
export interface RestorePlan {
  records: Rec[];
  /** Records of the current branch that were not written (metadata, system context, empty answers). */
  skipped: number;
  leafUuid: string | null;
}

/** The current branch, continued across compaction boundaries to the conversation they compacted. */
export function restorePath(tree: Tree): Rec[] {
  const out: Rec[] = [];
  const seen = new Set<string>();
  for (let r: Rec | undefined = tree.newestLeaf ?? undefined; r !== undefined;) {
    const id = uuidOf(r)!;
    if (seen.has(id)) break;
    seen.add(id);
    out.push(r);
    const p = parentOf(r);
    if (p !== null && tree.byUuid.has(p)) r = tree.byUuid.get(p);
    else if (isCompactBoundary(r) && typeof r.logicalParentUuid === "string") r = tree.byUuid.get(r.logicalParentUuid);
    else r = undefined;
  }
  return out.reverse();
}

/** Builds the restored transcript of the current branch of `tree`. */
export function planRestore(tree: Tree, target: { sessionId: string; cwd: string; agentId?: string }): RestorePlan {
  const path = restorePath(tree);
  const records: Rec[] = [];
  /** For each uuid on the path, the nearest kept record at or before it. */
  const keptBefore = new Map<string, string | null>();
  let previous: string | null = null;
  let skipped = 0;
  const envelope = { isSidechain: target.agentId !== undefined, sessionId: target.sessionId, cwd: target.cwd };
  for (const r of path) {
    const id = uuidOf(r)!;
    if (isCompactBoundary(r)) {
      records.push({ ...r, ...envelope, parentUuid: null, logicalParentUuid: previous });
      previous = id;
    } else if (isConversation(r) || isApiSystem(r)) {
      const message = apiSafeMessage(messageOf(r)!);
      if (Array.isArray(message.content) && message.content.length === 0) {
        skipped++; // an answer cut off before its first block: the API refuses an empty message
      } else {
        const out: Rec = { ...r, ...envelope, parentUuid: parentOf(r) === null ? null : previous, message };
        if (target.agentId === undefined) delete out.agentId;
        else out.agentId = target.agentId;
        records.push(out);
        previous = id;
      }
    } else {
      skipped++;
    }
    keptBefore.set(id, previous);
  }
  const kept = new Set(records.map((r) => uuidOf(r)!));
  for (const r of records) if (isCompactBoundary(r)) relinkSegment(r, path, keptBefore, kept);
  const written = toClaudeRecords(records);
  return { records: written, skipped, leafUuid: written.length === 0 ? null : uuidOf(written[written.length - 1]) };
}

/**
 * Claude Code's `last-prompt` record for a restored chain: the last typed prompt (on one line, at most 200
 * characters, as Claude Code cuts it) and the leaf it ended at, which its session list shows and resumes
 * from. Null when no prompt was typed.
 */
export function lastPromptRecord(sessionId: string, records: Rec[]): Rec | null {
  const typed = records.findLast((r) => r.type === "user" && r.isMeta !== true && !isToolResultOnly(r) && !isCompactSummary(r) && promptText(r) !== "");
  const leaf = records.findLast(isConversation);
  if (typed === undefined || leaf === undefined) return null;
  const line = promptText(typed).replaceAll("\n", " ").trim();
  return { type: "last-prompt", lastPrompt: line.length > 200 ? line.slice(0, 200).trim() + "…" : line, leafUuid: uuidOf(leaf), sessionId };
}

/** Points a boundary's kept tail at kept records (its head at or after, its tail at or before), or drops it. */
function relinkSegment(boundary: Rec, path: Rec[], keptBefore: Map<string, string | null>, kept: Set<string>): void {
  const meta = isObject(boundary.compactMetadata) ? boundary.compactMetadata : null;
  const segment = meta !== null && isObject(meta.preservedSegment) ? meta.preservedSegment : null;
  if (meta === null || segment === null) return;
  const ids = path.map((r) => uuidOf(r)!);
  const head = typeof segment.headUuid === "string" ? ids.indexOf(segment.headUuid) : -1;
  const headKept = head < 0 ? undefined : ids.slice(head).find((id) => kept.has(id));
  const tail = typeof segment.tailUuid === "string" ? keptBefore.get(segment.tailUuid) : undefined;
  const anchor = typeof segment.anchorUuid === "string" && kept.has(segment.anchorUuid) ? segment.anchorUuid : undefined;
  const { preservedSegment: _old, preservedMessages: _list, ...rest } = meta;
  boundary.compactMetadata = headKept && tail && anchor ? { ...rest, preservedSegment: { ...segment, headUuid: headKept, tailUuid: tail } } : rest;
}

/** A message with content the API accepts when Claude Code re-sends it. */
function apiSafeMessage(message: Record<string, unknown>): Record<string, unknown> {
  const out = withoutOwnKeys(message);
  if (Array.isArray(message.content)) out.content = safeBlocks(message.content);
  return out;
}

/** Drops the mirror's bookkeeping keys (`sessiontap_deltas`, `sessiontap_events`, `sessiontap_partial_json`). */
function withoutOwnKeys(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (!k.startsWith("sessiontap_")) out[k] = v;
  return out;
}

/** Rewrites blocks: references become text notes, tool results are rewritten inside. */
function safeBlocks(blocks: unknown[]): unknown[] {
  return blocks.map((b) => {
    if (!isObject(b)) return b;
    const block = withoutOwnKeys(b);
    if (isObject(block.source) && block.source.type === "reference") return referenceNote(block);
    if (Array.isArray(block.content)) block.content = safeBlocks(block.content);
    return block;
  });
}

/** The text that stands in for an image or document whose bytes the mirror never stored. */
export function referenceNote(block: Block): Block {
  const source = block.source as Record<string, unknown>;
  const kind = typeof block.type === "string" ? block.type : "attachment";
  const media = typeof source.media_type === "string" ? ` ${source.media_type}` : "";
  const sha = typeof source.sha256 === "string" ? `, sha256 ${source.sha256}` : "";
  return { type: "text", text: `[${kind}${media} not kept by sessiontap${sha}]` };
}
