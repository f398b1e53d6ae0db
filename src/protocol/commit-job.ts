// One response's records (docs/DESIGN.md "Exactly once"): the job every writer receives, and its records in Claude Code's envelope.
import type { Route } from "./classify.ts";
import type { Json } from "./json.ts";
import {
  chainHash,
  type HashedMessage,
  type Lineage,
  type LineageEntry,
  type LineageView,
  messageHash,
  overlay,
  planRequest,
  scrubContent,
  uuidFrom,
} from "./lineage.ts";
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
  kind: "complete" | "client-cut" | "upstream-cut" | "gave-up";
  owner?: { credential: string | null; claims: string | null };
  split?: boolean;
}

/** What every record of one request shares; a null is left out, never written (ccusage skips those). */
export interface EnvelopeBase {
  sessionId: string | null;
  cwd: string | null;
  gitBranch: string | null;
  entrypoint: string;
  version: string;
  isSidechain: boolean;
  agentId: string | null;
  parentAgentId?: string | null;
}

export type MirrorRecord = Json & { type: string; uuid: string; parentUuid: string | null; message?: Json };

type Placement = { uuid: string; parentUuid: string | null; timestamp: string; reconstructed?: boolean };

// The keys every record starts with, in Claude Code's order, and the provenance marker it ends with.
function record(type: string, base: EnvelopeBase, at: Placement, body: Json): MirrorRecord {
  const { sessionId, cwd, version, entrypoint, gitBranch, agentId } = base;
  const envelope = { sessionId, cwd, version, userType: "external", entrypoint, gitBranch, agentId, parentAgentId: base.parentAgentId || null };
  const out: Json = { parentUuid: at.parentUuid, isSidechain: base.isSidechain, type, uuid: at.uuid, timestamp: at.timestamp };
  for (const [key, value] of Object.entries(envelope)) if (value !== null) out[key] = value;
  Object.assign(out, body, { source: "sessiontap" });
  if (at.reconstructed) out.reconstructed = true;
  return out as MirrorRecord;
}

export function userRecord(base: EnvelopeBase, at: Placement, content: unknown, compactSummary = false): MirrorRecord {
  return record("user", base, at, { message: { role: "user", content }, ...(compactSummary ? { isCompactSummary: true } : {}) });
}

export function assistantRecord(base: EnvelopeBase, at: Placement, message: AssistantMessage, requestId: string | null): MirrorRecord {
  return record("assistant", base, at, { ...(requestId === null || requestId === "" ? {} : { requestId }), message });
}

/** `subpath`: "", "side" or "subagents/agent-<agent>"; `scope`: what record uuids are derived in; `key`: its one name below the root. */
export type ConversationPlace = ReturnType<typeof place>;

function place(sessionDir: string, subpath: string, scope: string) {
  return { sessionDir, subpath, scope, key: subpath === "" ? sessionDir : `${sessionDir}/${subpath}` };
}

export function placeOf(route: Route, sessionDir: string, agentDir: string | null): ConversationPlace {
  if (route === "agent") return place(sessionDir, `subagents/agent-${agentDir}`, `${sessionDir}/agent-${agentDir}`);
  return route === "side" ? place(sessionDir, "side", `${sessionDir}/side`) : place(sessionDir, "", sessionDir);
}

export function mainPlaceOf(of: ConversationPlace): ConversationPlace | null {
  return of.subpath === "side" ? place(of.sessionDir, "", of.sessionDir) : null;
}

export interface Staged {
  records: MirrorRecord[];
  ops: ({ add: LineageEntry } | { alias: { key: string; uuid: string } })[];
}

// The messages after a compaction's summary that the main conversation already holds, never the last (the new turn).
type KeptTail = { count: number; headUuid: string; tailUuid: string };

function keptTail(messages: HashedMessage[], main: Lineage): KeptTail | null {
  let kept = null as KeptTail | null;
  const last = messages.findLastIndex((m) => m.role !== "system");
  for (let i = 1; i < last; i++) {
    if (messages[i].role === "system") continue;
    const uuid = main.byHash.get(messages[i].hash);
    if (uuid === undefined) break;
    kept = { count: i, headUuid: kept?.headUuid ?? uuid, tailUuid: uuid };
  }
  return kept;
}

// Into `own`, seen over `main` for a side request: the new messages, then the answer; a compaction opens with its boundary.
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
    // Claude Code's compaction marker: a new root whose `logicalParentUuid` is the last record before it, the kept tail named as it does.
    const compactMetadata = kept ? { preservedSegment: { headUuid: kept.headUuid, anchorUuid: summaryUuid, tailUuid: kept.tailUuid } } : {};
    const marker = { subtype: "compact_boundary", content: "Conversation compacted", level: "info", logicalParentUuid: own.leaf, compactMetadata };
    records.push(record("system", base, { uuid: boundaryUuid, parentUuid: null, timestamp }, marker));
    ops.push({ add: { key: `boundary:${boundaryUuid}`, uuid: boundaryUuid, chain: null, hash: null } });
    parentUuid = boundaryUuid;
    skipUntil = kept ? kept.count : 0;
  }
  for (let i = plan.start; i < messages.length; i++) {
    const m = messages[i];
    if (i >= 1 && i <= skipUntil) {
      if (m.role !== "system") ops.push({ alias: { key: m.key, uuid: summaryUuid! } });
      continue;
    }
    const uuid = uuidFrom(`${scope}:${m.key}`);
    const summary = i === 0 && summaryUuid !== null;
    const at = { uuid, parentUuid, timestamp, reconstructed: i < plan.reconstructedBefore && !summary };
    const content = scrubContent(m.content, includeThinking);
    // An answer rebuilt from history holds only what the history does; a system message is kept as sent.
    if (m.role === "assistant") {
      records.push(record("assistant", base, { ...at, reconstructed: true }, { message: { type: "message", role: "assistant", content } }));
    } else if (m.role === "system") records.push(record("system", base, at, { subtype: "api_message", message: { role: "system", content } }));
    else records.push(userRecord(base, at, content, summary));
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
