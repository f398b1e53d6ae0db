/**
 * Turns a plan (see lineage.ts) into the records one response completes: the request's new messages,
 * then the assistant's answer, each with its uuid and parent. Pure.
 */
import { chainHash, messageHash, uuidFrom } from "./message-hash.ts";
import { scrubContent } from "./content.ts";
import {
  assistantRecord,
  compactBoundaryRecord,
  type EnvelopeBase,
  type MirrorRecord,
  reconstructedAssistantRecord,
  systemRecord,
  userRecord,
} from "./envelope.ts";
import type { HashedMessage, LineageView, Plan } from "./lineage.ts";
import type { LineageEntry } from "./lineage-state.ts";
import type { AssistantMessage } from "./sse-accumulator.ts";

/** The answer to add after the staged history, when there is one. */
export interface Answer {
  message: AssistantMessage;
  requestId: string | null;
  timestamp: string;
}

/** A compaction's new segment: what the boundary logically follows, and which old records the request kept. */
export interface Compaction {
  logicalParentUuid: string | null;
  /** Messages right after the summary that were mirrored before compaction (not written again). */
  keptTail: { count: number; headUuid: string; tailUuid: string } | null;
}

/** A change to the lineage, applied in order once the write succeeded. */
export type LineageOp = { add: LineageEntry } | { alias: { key: string; uuid: string } };

/** Records to append in one write, and the lineage changes they make. */
export interface Staged {
  records: MirrorRecord[];
  ops: LineageOp[];
}

/** What to stage, and how. */
export interface StageInput {
  plan: Plan;
  messages: HashedMessage[];
  base: EnvelopeBase;
  /** Scopes uuids: the same message in two sessions or two agents gets two ids. */
  scope: string;
  requestTimestamp: string;
  includeThinking: boolean;
  answer: Answer | null;
  /** The lineage the plan was made against (an answer already mirrored is not written again). */
  view: LineageView;
  /** Set when this request opens a compacted segment (plan.start is 0). */
  compaction?: Compaction | null;
}

/** Builds the records for the plan's new messages and the answer, linked parent to child. */
export function stage(input: StageInput): Staged {
  const { plan, messages, base, scope } = input;
  const records: MirrorRecord[] = [];
  const ops: LineageOp[] = [];
  let parentUuid = plan.parentUuid;
  let skipUntil = -1;
  let summaryUuid: string | null = null;
  if (input.compaction && plan.start === 0 && messages.length > 0) {
    const boundaryUuid = uuidFrom(`${scope}:boundary:${messages[0].key}`);
    summaryUuid = uuidFrom(`${scope}:${messages[0].key}`);
    const kept = input.compaction.keptTail;
    const segment = kept ? { headUuid: kept.headUuid, anchorUuid: summaryUuid, tailUuid: kept.tailUuid } : null;
    records.push(
      compactBoundaryRecord(base, { uuid: boundaryUuid, parentUuid: null, timestamp: input.requestTimestamp }, input.compaction.logicalParentUuid, segment),
    );
    ops.push({ add: { key: `boundary:${boundaryUuid}`, uuid: boundaryUuid, chain: null, hash: null } });
    parentUuid = boundaryUuid;
    skipUntil = kept ? kept.count : 0;
  }
  for (let i = plan.start; i < messages.length; i++) {
    const m = messages[i];
    if (i >= 1 && i <= skipUntil && summaryUuid !== null) {
      // Kept from before the compaction: already mirrored, so only its position is remembered.
      if (m.role !== "system") ops.push({ alias: { key: m.key, uuid: summaryUuid } });
      continue;
    }
    const uuid = uuidFrom(`${scope}:${m.key}`);
    // A compaction's summary (and the tail it keeps) is what the client sends now, not rebuilt history.
    const opensSegment = summaryUuid !== null && i <= skipUntil;
    const at = { uuid, parentUuid, timestamp: input.requestTimestamp, reconstructed: i < plan.reconstructedBefore && !opensSegment };
    const content = scrubContent(m.content, input.includeThinking);
    if (m.role === "assistant") records.push(reconstructedAssistantRecord(base, at, content));
    else if (m.role === "system") records.push(systemRecord(base, at, content));
    else records.push(userRecord(base, at, content, i === 0 && summaryUuid !== null));
    ops.push({ add: { key: m.key, uuid, chain: m.chain, hash: m.role === "system" ? null : m.hash } });
    parentUuid = uuid;
  }
  if (input.answer !== null) {
    const hash = messageHash("assistant", input.answer.message.content);
    const chain = chainHash(messages.at(-1)?.chain ?? null, hash);
    if (input.view.get(chain) === undefined) {
      const uuid = uuidFrom(`${scope}:${chain}`);
      const message = { ...input.answer.message, content: scrubContent(input.answer.message.content, input.includeThinking) };
      records.push(assistantRecord(base, { uuid, parentUuid, timestamp: input.answer.timestamp }, message, input.answer.requestId));
      ops.push({ add: { key: chain, uuid, chain, hash } });
    }
  }
  return { records, ops };
}
