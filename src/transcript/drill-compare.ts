// What `sessiontap drill` judges (docs/DESIGN.md "Drill"): the conversation Claude Code sent on resume against the
// mirror's current branch, item by item — every prompt, answer, tool call and tool result once, in order. Pure.
import { type Block, blocksOf, isCompactBoundary, isInjectedText, messageOf, oneLine, parentOf, type Rec, uuidOf } from "./records.ts";
import { referenceNote } from "./restore-plan.ts";
import type { Tree } from "./tree.ts";
import { isObject } from "../protocol/json.ts";

/** One thing the conversation says; `where` names it for a failure, `alone` marks the only item of its message. */
type Item = { kind: string; key: string; where: string; alone?: boolean };

/** `turns`: the branch's records that hold a prompt; `compactedFirst`: Claude Code compacted before the probe (its first request was the summary's). */
export type Verdict = { ok: boolean; detail: string; turns: number; compactedFirst: boolean };

/**
 * The branch Claude Code resumes: from the newest leaf up to a compaction boundary (not past it), with the
 * boundary's kept tail (`preservedSegment`, tail up to head) spliced in after its summary, as Claude Code loads it.
 */
export function resumedBranch(tree: Tree): Rec[] {
  const path: Rec[] = [];
  let boundary: Rec | null = null;
  const seen = new Set<string>();
  for (let r = tree.newestLeaf ?? undefined; r !== undefined && !seen.has(uuidOf(r)!); r = tree.byUuid.get(parentOf(r) ?? "")) {
    seen.add(uuidOf(r)!);
    if (isCompactBoundary(r)) {
      boundary = r;
      break;
    }
    path.unshift(r);
  }
  const meta = isObject(boundary?.compactMetadata) ? boundary.compactMetadata : null;
  const segment = isObject(meta?.preservedSegment) ? meta.preservedSegment : null;
  const at = segment === null ? -1 : path.findIndex((r) => uuidOf(r) === segment.anchorUuid);
  if (segment === null || at < 0) return path;
  const kept: Rec[] = [];
  for (let r = tree.byUuid.get(String(segment.tailUuid)); r !== undefined && !seen.has(uuidOf(r)!); r = tree.byUuid.get(parentOf(r) ?? "")) {
    seen.add(uuidOf(r)!);
    kept.unshift(r);
    if (uuidOf(r) === segment.headUuid) break;
  }
  return [...path.slice(0, at + 1), ...kept, ...path.slice(at + 1)];
}

/** A block as restore writes it: an image or document the mirror kept only by reference is a text note. */
const restored = (b: Block) => (isObject(b.source) && b.source.type === "reference" ? referenceNote(b) : b);

/** A tool result's content: text blocks and a string say the same; anything else compares as JSON. */
function resultKey(content: unknown): string {
  const blocks = blocksOf(content).map(restored);
  return blocks.every((b) => b.type === "text") ? blocks.map((b) => b.text).join("\n") : JSON.stringify(blocks);
}

/** The items of one message. Claude Code's injected context, thinking and empty text say nothing of the conversation. */
function itemsOf(role: unknown, content: unknown, where: string): Item[] {
  const out: Item[] = [];
  for (const b of blocksOf(content).map(restored)) {
    if (b.type === "text" && typeof b.text === "string" && !isInjectedText(b.text) && b.text.trim() !== "") {
      out.push({ kind: role === "user" ? "prompt" : "answer", key: b.text.trimEnd(), where }); // merged messages gain a "\n"
    } else if (b.type === "tool_use") out.push({ kind: "tool call", key: `${b.id} ${b.name} ${JSON.stringify(b.input)}`, where });
    else if (b.type === "tool_result") out.push({ kind: "tool result", key: `${b.tool_use_id} ${resultKey(b.content)}`, where });
    else if (b.type === "image" || b.type === "document") out.push({ kind: b.type, key: b.type, where });
  }
  return out;
}

const shown = (x: Item) => `${x.kind} ${x.where}: ${JSON.stringify(oneLine(x.kind.startsWith("tool") ? x.key.slice(x.key.indexOf(" ") + 1) : x.key, 80))}`;

/**
 * Compares the mirror's `branch` with the `messages` of Claude Code's first request on resume. Besides the
 * probe (or, when it compacted first, its summary instruction), Claude Code may add only what it adds to an
 * unfinished session: an error result for a call without one, a lone filler answer between two prompts.
 */
export function compareResume(branch: Rec[], messages: unknown[], probe: string): Verdict {
  let turns = 0;
  const want = branch.filter((r) => r.type === "user" || r.type === "assistant").flatMap((r) => {
    const items = itemsOf(r.type, messageOf(r)?.content, "");
    if (items.some((x) => x.kind === "prompt")) turns++;
    return items.map((x) => ({ ...x, where: `from record ${uuidOf(r)}, turn ${turns}` }));
  });
  const got = messages.flatMap((m, i) => {
    const items = isObject(m) && m.role !== "system" ? itemsOf(m.role, m.content, `in message ${i + 1} of the resumed request`) : [];
    return items.map((x) => ({ ...x, alone: items.length === 1 }));
  });
  const last = got.at(-1);
  const compactedFirst = last?.kind === "prompt" && last.key.startsWith("CRITICAL: Respond with TEXT ONLY");
  if (last?.kind === "prompt" && (last.key === probe || compactedFirst)) got.pop();
  const answered = new Set(want.filter((x) => x.kind === "tool result").map((x) => x.key.split(" ")[0]));
  const verdict = (ok: boolean, detail: string): Verdict => ({ ok, detail, turns, compactedFirst });
  for (let i = 0, j = 0; i < want.length || j < got.length;) {
    const w = want[i] as Item | undefined;
    const g = got[j] as Item | undefined;
    if (w !== undefined && g !== undefined && w.kind === g.kind && w.key === g.key) {
      i++, j++;
    } else if (
      g !== undefined && ((g.kind === "tool result" && !answered.has(g.key.split(" ")[0])) || (g.kind === "answer" && g.alone && w?.kind !== "answer"))
    ) {
      j++;
    } else if (g === undefined) return verdict(false, `missing ${shown(w!)}`);
    else if (w === undefined) return verdict(false, `extra ${shown(g)}`);
    else {
      const later = want.slice(i).some((x) => x.kind === g.kind && x.key === g.key);
      if (later) return verdict(false, `missing ${shown(w)}`);
      return verdict(
        false,
        w.kind === g.kind ? `missing ${shown(w)} (Claude Code sent instead: ${shown(g)})` : `extra ${shown(g)} (where the mirror has ${shown(w)})`,
      );
    }
  }
  return verdict(true, `${want.length} items resumed in order${compactedFirst ? " (Claude Code compacted the conversation first)" : ""}`);
}
