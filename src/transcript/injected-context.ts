/**
 * Restored prompts the way Claude Code 2.1.328 records them: what it typed apart from what it injected.
 * Pure.
 *
 * On the wire Claude Code merges its injected context into the user message it sends: `<system-reminder>`
 * blocks (attribution, dates, environment), and around a slash command the `<local-command-caveat>`, the
 * `<command-name>` and its `<local-command-stdout>`, each a text block before the typed prompt. The
 * mirror keeps that message as sent. Claude Code's own transcript keeps them apart: the typed prompt is
 * a user record of its own, the caveat a user record with `isMeta: true` (hidden on screen), the command
 * and its output user records of their own, reminders attachment records. When it resumes, it joins
 * consecutive user records back into one message, adding a "\n" after each text block that another
 * record follows (checked with the real CLI: a meta record "…</system-reminder>" followed by the prompt
 * record is sent as "…</system-reminder>\n" then the prompt, byte for byte what was sent before).
 *
 * So a restored user message whose leading text blocks are injected context is written as one record per
 * such block (reminders and caveats `isMeta: true`, so `claude --resume` shows the typed prompt, not a
 * reminder), each without the trailing "\n" Claude Code adds back, then the rest as the record that keeps
 * the original uuid. A message that would not come back byte for byte (an injected block not ending in
 * "\n", or typed text between injected blocks) is left whole.
 */
import { uuidFrom } from "../protocol/message-hash.ts";
import { type Block, isToolResultOnly, messageOf, parentOf, type Rec, uuidOf } from "./records.ts";
import { isObject } from "../protocol/json.ts";

/** Blocks Claude Code keeps as records of their own, and those of them it hides (`isMeta`). */
const OWN_RECORD = /^<(system-reminder|local-command-caveat|command-name|command-message|local-command-stdout|local-command-stderr)>/;
const HIDDEN = /^<(system-reminder|local-command-caveat)>/;

/** The split of one message's blocks: injected blocks (one record each), then the rest; null when it stays whole. */
function splitBlocks(content: unknown): { injected: Block[]; rest: Block[] } | null {
  if (!Array.isArray(content)) return null;
  const blocks = content.filter(isObject) as Block[];
  if (blocks.length !== content.length || blocks.some((b) => b.type === "tool_result")) return null;
  let n = 0;
  while (n < blocks.length && blocks[n].type === "text" && typeof blocks[n].text === "string" && OWN_RECORD.test(blocks[n].text as string)) n++;
  if (n === 0 || n === blocks.length) return null; // nothing injected, or nothing typed after it
  const injected = blocks.slice(0, n);
  if (!injected.every((b) => (b.text as string).endsWith("\n"))) return null;
  return { injected, rest: blocks.slice(n) };
}

/**
 * Splits the injected context off the user records of a restored chain (records in order, each record's
 * parent before it). Children keep pointing at the original uuid (the typed prompt's record); a compact
 * boundary's kept segment that starts at a split record starts at its first piece.
 */
export function splitInjectedContext(records: Rec[]): Rec[] {
  const out: Rec[] = [];
  const firstPiece = new Map<string, string>();
  for (const r of records) {
    const message = messageOf(r);
    const split = r.type === "user" && message !== null && !isToolResultOnly(r) && r.isCompactSummary !== true ? splitBlocks(message.content) : null;
    const id = uuidOf(r);
    if (split === null || id === null) {
      out.push(r);
      continue;
    }
    let parent = parentOf(r);
    split.injected.forEach((block, i) => {
      const uuid = uuidFrom(`${id}:injected:${i}`);
      if (i === 0) firstPiece.set(id, uuid);
      const piece: Rec = { ...r, parentUuid: parent, uuid, message: { ...message, content: [{ ...block, text: (block.text as string).slice(0, -1) }] } };
      if (HIDDEN.test(block.text as string)) piece.isMeta = true;
      out.push(piece);
      parent = uuid;
    });
    out.push({ ...r, parentUuid: parent, message: { ...message, content: split.rest } });
  }
  for (const r of out) {
    const meta = isObject(r.compactMetadata) ? r.compactMetadata : null;
    const segment = meta !== null && isObject(meta.preservedSegment) ? meta.preservedSegment : null;
    if (segment !== null && typeof segment.headUuid === "string" && firstPiece.has(segment.headUuid)) {
      r.compactMetadata = { ...meta, preservedSegment: { ...segment, headUuid: firstPiece.get(segment.headUuid) } };
    }
  }
  return out;
}
