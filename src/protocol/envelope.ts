/**
 * Shapes transcript records in Claude Code's envelope (docs/DESIGN.md "The mirror"). Pure: the caller supplies
 * uuids, parents and the time.
 */
import { type AssistantMessage } from "./sse-accumulator.ts";
import type { Json } from "./json.ts";

/**
 * What every record of one request shares. A null id, directory or branch is left out of the record, never
 * written as null: readers of Claude Code's files (ccusage) skip a record whose `sessionId` or `cwd` is null.
 */
export interface EnvelopeBase {
  sessionId: string | null;
  cwd: string | null;
  gitBranch: string | null;
  entrypoint: string;
  /** A version number, as Claude Code writes it (docs/DESIGN.md "Readable by other tools"). */
  version: string;
  isSidechain: boolean;
  agentId: string | null;
  /** `x-claude-code-parent-agent-id`, for a subagent started by another agent. */
  parentAgentId?: string | null;
}

/** One mirrored record, as written (one JSON line). */
export type MirrorRecord = Json & { type: string; uuid: string; parentUuid: string | null; message?: Json };

/** Where a record sits and when it was made. */
export interface Placement {
  uuid: string;
  parentUuid: string | null;
  timestamp: string;
  reconstructed?: boolean;
}

/** The keys every record starts with, in Claude Code's order. */
function head(type: string, base: EnvelopeBase, at: Placement): Json {
  const out: Json = { parentUuid: at.parentUuid, isSidechain: base.isSidechain, type, uuid: at.uuid, timestamp: at.timestamp };
  if (base.sessionId !== null) out.sessionId = base.sessionId;
  if (base.cwd !== null) out.cwd = base.cwd;
  out.version = base.version;
  out.userType = "external";
  out.entrypoint = base.entrypoint;
  if (base.gitBranch !== null) out.gitBranch = base.gitBranch;
  if (base.agentId !== null) out.agentId = base.agentId;
  if (base.parentAgentId) out.parentAgentId = base.parentAgentId;
  return out;
}

/** Closes a record: the provenance marker, and `reconstructed` when it was rebuilt from history. */
function tail(record: Json, at: Placement): MirrorRecord {
  record.source = "sessiontap";
  if (at.reconstructed) record.reconstructed = true;
  return record as MirrorRecord;
}

/** A user record (a prompt or tool results); `compactSummary` marks the summary that opens a compacted segment. */
export function userRecord(base: EnvelopeBase, at: Placement, content: unknown, compactSummary = false): MirrorRecord {
  const record: Json = { ...head("user", base, at), message: { role: "user", content } };
  if (compactSummary) record.isCompactSummary = true;
  return tail(record, at);
}

/**
 * Claude Code's own compaction marker (`type:"system"`, `subtype:"compact_boundary"`): a new root whose
 * `logicalParentUuid` is the last record before the compaction, with the kept tail named as Claude Code
 * names it (`compactMetadata.preservedSegment`).
 */
export function compactBoundaryRecord(
  base: EnvelopeBase,
  at: Placement,
  logicalParentUuid: string | null,
  preservedSegment: { headUuid: string; anchorUuid: string; tailUuid: string } | null,
): MirrorRecord {
  const record: Json = {
    ...head("system", base, at),
    subtype: "compact_boundary",
    content: "Conversation compacted",
    level: "info",
    logicalParentUuid,
    compactMetadata: preservedSegment ? { preservedSegment } : {},
  };
  return tail(record, at);
}

/**
 * A record for a `role:"system"` message inside `messages` (Claude Code 2.1.328 sends its environment
 * block that way): `type:"system"`, `subtype:"api_message"`, the message kept as sent.
 */
export function systemRecord(base: EnvelopeBase, at: Placement, content: unknown): MirrorRecord {
  const h = head("system", base, at);
  return tail({ ...h, subtype: "api_message", message: { role: "system", content } }, at);
}

/** An assistant record from a response the tap saw, with its `request-id` (left out when the upstream sent none, or an empty one). */
export function assistantRecord(base: EnvelopeBase, at: Placement, message: AssistantMessage, requestId: string | null): MirrorRecord {
  return tail({ ...head("assistant", base, at), ...(requestId === null || requestId === "" ? {} : { requestId }), message }, at);
}

/** An assistant record rebuilt from a request's history: only what the history holds (no id, usage, requestId). */
export function reconstructedAssistantRecord(base: EnvelopeBase, at: Placement, content: unknown): MirrorRecord {
  const message = { type: "message", role: "assistant", content };
  return tail({ ...head("assistant", base, at), message }, { ...at, reconstructed: true });
}
