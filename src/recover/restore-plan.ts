/**
 * The transcript `sessiontap restore` writes: what Claude Code can resume. Pure.
 *
 * - The current branch only (root to newest leaf by `parentUuid`), so a rewound or retried exchange does
 *   not come back as a second answer. A compaction's new root ends the branch, as in Claude Code's own
 *   loading: the history it resumes with is the compacted one it had last sent.
 * - Only user and assistant records. The mirror's `system`/`api_message` records (environment context
 *   Claude Code rebuilds itself) and any other metadata record are left out; each kept record's
 *   `parentUuid` is re-linked to the nearest kept record above it. (Checked with the real CLI: with
 *   `system` records in the transcript it re-sent an empty system message; with an unlinked parent it
 *   resumed from the break only.)
 * - `sessionId` is the session's, `cwd` the target's (with `--cwd`), `isSidechain` false.
 * - Content the API would refuse on the resumed request is made acceptable: an image or document the
 *   mirror kept only as a sha256 reference becomes a text note saying what was there, and the mirror's
 *   own bookkeeping keys (`sessiontap_*`) are dropped from messages and blocks.
 */
import { isConversation, isObject, messageOf, uuidOf, type Block, type Rec } from "./records.ts";
import { currentBranch, type Tree } from "./tree.ts";

/** What to write, and what was left out. */
export interface RestorePlan {
  records: Rec[];
  /** Records of the current branch that were not user or assistant records. */
  skipped: number;
  leafUuid: string | null;
}

/** Builds the restored transcript of the current branch of `tree`. */
export function planRestore(tree: Tree, target: { sessionId: string; cwd: string }): RestorePlan {
  const branch = currentBranch(tree);
  const records: Rec[] = [];
  let parent: string | null = null;
  let skipped = 0;
  for (const r of branch) {
    if (!isConversation(r)) {
      skipped++;
      continue;
    }
    const message = apiSafeMessage(messageOf(r)!);
    if (Array.isArray(message.content) && message.content.length === 0) {
      skipped++; // an answer cut off before its first block: the API refuses an empty message
      continue;
    }
    const out: Rec = { ...r, parentUuid: parent, isSidechain: false, sessionId: target.sessionId, cwd: target.cwd };
    delete out.agentId;
    out.message = message;
    records.push(out);
    parent = uuidOf(r);
  }
  return { records, skipped, leafUuid: parent };
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
