// One response's worth of records for a conversation (docs/DESIGN.md "Exactly once"): the job every writer receives (JSON-safe,
// so a spool can keep it), where its conversation lives, and its plan against the lineages it touches. Pure.
import type { Route } from "./classify.ts";
import {
  assistantRecord,
  compactBoundaryRecord,
  type EnvelopeBase,
  type MirrorRecord,
  reconstructedAssistantRecord,
  systemRecord,
  userRecord,
} from "./envelope.ts";
import { type HashedMessage, type Lineage, type LineageEntry, type LineageView, overlay, planRequest } from "./lineage.ts";
import { chainHash, messageHash, scrubContent, uuidFrom } from "./message-hash.ts";
import type { AssistantMessage } from "./sse-accumulator.ts";

export interface Answer {
  message: AssistantMessage;
  requestId: string | null;
  timestamp: string;
}

export interface CommitJob {
  route: Route;
  compaction: boolean;
  sessionDir: string;
  agentDir: string | null;
  messages: HashedMessage[];
  base: EnvelopeBase;
  requestTimestamp: string;
  answer: Answer | null;
  /** `gave-up`: the mirror stopped reading the answer (docs/DESIGN.md "Off the relay path") and keeps only the request. */
  kind: "complete" | "client-cut" | "upstream-cut" | "gave-up";
  /** Fingerprints (session-id.ts), when the mirror binds sessions. */
  owner?: { credential: string | null; claims: string | null };
  /** The request carried another owner's session id, and was given a session of its own. */
  split?: boolean;
}

/**
 * A conversation's place in its session: `subpath` is "" for the main conversation, "side" or "subagents/agent-<agent>";
 * `scope` is what record uuids are derived in and `key` its one name below the root, alike for the tree and the store.
 */
export interface ConversationPlace {
  sessionDir: string;
  subpath: string;
  scope: string;
  key: string;
}

function place(sessionDir: string, subpath: string, scope: string): ConversationPlace {
  return { sessionDir, subpath, scope, key: subpath === "" ? sessionDir : `${sessionDir}/${subpath}` };
}

export function placeOf(route: Route, sessionDir: string, agentDir: string | null): ConversationPlace {
  if (route === "agent") return place(sessionDir, `subagents/agent-${agentDir}`, `${sessionDir}/agent-${agentDir}`);
  return route === "side" ? place(sessionDir, "side", `${sessionDir}/side`) : place(sessionDir, "", sessionDir);
}

/** The main conversation a side request's records hang from (a title or a summary repeats it, and must not copy it); else null. */
export function mainPlaceOf(of: ConversationPlace): ConversationPlace | null {
  return of.subpath === "side" ? place(of.sessionDir, "", of.sessionDir) : null;
}

/** Appended in one write; `ops` change the lineage once it succeeded. */
export interface Staged {
  records: MirrorRecord[];
  ops: ({ add: LineageEntry } | { alias: { key: string; uuid: string } })[];
}

type KeptTail = { count: number; headUuid: string; tailUuid: string } | null;

// The messages right after a compaction's summary that the main conversation already holds (Claude Code keeps a short tail),
// never the last one (the new turn).
function keptTail(messages: HashedMessage[], main: Lineage): KeptTail {
  let count = 0;
  let headUuid: string | null = null;
  let tailUuid: string | null = null;
  const last = messages.findLastIndex((m) => m.role !== "system");
  for (let i = 1; i < last; i++) {
    if (messages[i].role === "system") continue;
    const uuid = main.recordWithHash(messages[i].hash);
    if (uuid === undefined) break;
    headUuid ??= uuid;
    tailUuid = uuid;
    count = i;
  }
  return headUuid !== null && tailUuid !== null ? { count, headUuid, tailUuid } : null;
}

/**
 * Plans one commit into `own`, seen over `main` for a side request (what it repeats of the main chain is never copied): the
 * new messages, then the answer, each with its uuid (derived in `scope`) and parent; a compaction opens with its boundary.
 */
export function planCommit(
  job: Pick<CommitJob, "messages" | "base" | "answer" | "requestTimestamp" | "compaction">,
  own: Lineage,
  main: Lineage | null,
  scope: string,
  includeThinking: boolean,
): Staged {
  const { messages, base, requestTimestamp: timestamp } = job;
  const view: LineageView = main !== null && main !== own ? overlay(own, main) : own;
  const plan = planRequest(view, messages);
  const records: MirrorRecord[] = [];
  const ops: Staged["ops"] = [];
  let parentUuid = plan.parentUuid;
  let skipUntil = -1;
  let summaryUuid: string | null = null;
  if (job.compaction && plan.start === 0 && messages.length > 0) {
    const kept = keptTail(messages, own);
    const boundaryUuid = uuidFrom(`${scope}:boundary:${messages[0].key}`);
    summaryUuid = uuidFrom(`${scope}:${messages[0].key}`);
    const segment = kept ? { headUuid: kept.headUuid, anchorUuid: summaryUuid, tailUuid: kept.tailUuid } : null;
    records.push(compactBoundaryRecord(base, { uuid: boundaryUuid, parentUuid: null, timestamp }, own.leaf, segment));
    ops.push({ add: { key: `boundary:${boundaryUuid}`, uuid: boundaryUuid, chain: null, hash: null } });
    parentUuid = boundaryUuid;
    skipUntil = kept ? kept.count : 0;
  }
  for (let i = plan.start; i < messages.length; i++) {
    const m = messages[i];
    if (i >= 1 && i <= skipUntil) {
      // Kept from before the compaction: already mirrored, so only its position is remembered.
      if (m.role !== "system") ops.push({ alias: { key: m.key, uuid: summaryUuid! } });
      continue;
    }
    const uuid = uuidFrom(`${scope}:${m.key}`);
    // A compaction's summary is what the client sends now, not rebuilt history.
    const at = { uuid, parentUuid, timestamp, reconstructed: i < plan.reconstructedBefore && !(summaryUuid !== null && i <= skipUntil) };
    const content = scrubContent(m.content, includeThinking);
    if (m.role === "assistant") records.push(reconstructedAssistantRecord(base, at, content));
    else if (m.role === "system") records.push(systemRecord(base, at, content));
    else records.push(userRecord(base, at, content, i === 0 && summaryUuid !== null));
    ops.push({ add: { key: m.key, uuid, chain: m.chain, hash: m.role === "system" ? null : m.hash } });
    parentUuid = uuid;
  }
  const answer = job.answer;
  if (answer === null) return { records, ops };
  const hash = messageHash("assistant", answer.message.content);
  const chain = chainHash(messages.at(-1)?.chain ?? null, hash);
  if (view.get(chain) !== undefined) return { records, ops }; // already mirrored
  const uuid = uuidFrom(`${scope}:${chain}`);
  const message = { ...answer.message, content: scrubContent(answer.message.content, includeThinking) };
  records.push(assistantRecord(base, { uuid, parentUuid, timestamp: answer.timestamp }, message, answer.requestId));
  ops.push({ add: { key: chain, uuid, chain, hash } });
  return { records, ops };
}
