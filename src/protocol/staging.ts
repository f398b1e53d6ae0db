/**
 * Turns a plan (see lineage.ts) into the records one response completes: the request's new messages,
 * then the assistant's answer, each with its uuid and parent. Pure.
 */
import { chainHash, messageHash, uuidFrom } from "./message-hash.ts";
import { scrubContent } from "./content.ts";
import {
  assistantRecord, reconstructedAssistantRecord, systemRecord, userRecord,
  type EnvelopeBase, type MirrorRecord,
} from "./envelope.ts";
import { systemKey, type HashedMessage, type Plan } from "./lineage.ts";
import type { AssistantMessage } from "./sse-accumulator.ts";

/** The answer to add after the staged history, when there is one. */
export interface Answer {
  message: AssistantMessage;
  requestId: string | null;
  timestamp: string;
}

/** Records to append in one write, and the chain hash → uuid entries they add to the index. */
export interface Staged {
  records: MirrorRecord[];
  entries: [chain: string, uuid: string][];
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
  /** Chains already in the index (an answer identical to one already mirrored is not written again). */
  known: (chain: string) => boolean;
}

/** Builds the records for the plan's new messages and the answer, linked parent to child. */
export function stage(input: StageInput): Staged {
  const { plan, messages, base, scope } = input;
  const records: MirrorRecord[] = [];
  const entries: [string, string][] = [];
  let parentUuid = plan.parentUuid;
  for (let i = plan.start; i < messages.length; i++) {
    const m = messages[i];
    const uuid = uuidFrom(`${scope}:${m.key}`);
    const at = { uuid, parentUuid, timestamp: input.requestTimestamp, reconstructed: i < plan.reconstructedBefore };
    const content = scrubContent(m.content, input.includeThinking);
    if (m.role === "assistant") records.push(reconstructedAssistantRecord(base, at, content));
    else if (m.role === "system") records.push(systemRecord(base, at, content));
    else records.push(userRecord(base, at, content));
    entries.push([m.key, uuid]);
    parentUuid = uuid;
  }
  if (input.answer !== null) {
    const last = messages.at(-1)?.chain ?? null;
    const chain = chainHash(last, messageHash("assistant", input.answer.message.content));
    if (!input.known(chain)) {
      const uuid = uuidFrom(`${scope}:${chain}`);
      const message = { ...input.answer.message, content: scrubContent(input.answer.message.content, input.includeThinking) };
      const at = { uuid, parentUuid, timestamp: input.answer.timestamp };
      records.push(assistantRecord(base, at, message, input.answer.requestId));
      entries.push([chain, uuid]);
    }
  }
  return { records, entries };
}

/** Rebuilds an index from records read back in file order: each record's chain from its parent's. */
export function indexFromRecords(records: Record<string, unknown>[]): Map<string, string> {
  const index = new Map<string, string>();
  const chainOf = new Map<string, string | null>();
  for (const r of records) {
    const message = r.message as { role?: unknown; content?: unknown } | undefined;
    if (typeof r.uuid !== "string" || typeof message !== "object" || message === null) continue;
    const parent = typeof r.parentUuid === "string" ? (chainOf.get(r.parentUuid) ?? null) : null;
    const hash = messageHash(message.role, message.content);
    if (message.role === "system") {
      chainOf.set(r.uuid, parent); // transparent: the conversation's position does not move
      index.set(systemKey(parent, hash), r.uuid);
      continue;
    }
    const chain = chainHash(parent, hash);
    chainOf.set(r.uuid, chain);
    index.set(chain, r.uuid);
  }
  return index;
}
