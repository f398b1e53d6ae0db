// Transcript records in Claude Code's envelope (docs/DESIGN.md "The mirror"); the caller supplies uuids, parents and times. Pure.
import { type AssistantMessage } from "./sse-accumulator.ts";
import type { Json } from "./json.ts";

/** What every record of one request shares; a null id, directory or branch is left out, never written as null (ccusage skips those). */
export interface EnvelopeBase {
  sessionId: string | null;
  cwd: string | null;
  gitBranch: string | null;
  entrypoint: string;
  /** A version number, as Claude Code writes it (docs/DESIGN.md "Readable by other tools"). */
  version: string;
  isSidechain: boolean;
  agentId: string | null;
  parentAgentId?: string | null;
}

export type MirrorRecord = Json & { type: string; uuid: string; parentUuid: string | null; message?: Json };

type Placement = { uuid: string; parentUuid: string | null; timestamp: string; reconstructed?: boolean };

// The keys every record starts with, in Claude Code's order, and the provenance marker it ends with.
function record(type: string, base: EnvelopeBase, at: Placement, body: Json): MirrorRecord {
  const out: Json = { parentUuid: at.parentUuid, isSidechain: base.isSidechain, type, uuid: at.uuid, timestamp: at.timestamp };
  if (base.sessionId !== null) out.sessionId = base.sessionId;
  if (base.cwd !== null) out.cwd = base.cwd;
  Object.assign(out, { version: base.version, userType: "external", entrypoint: base.entrypoint });
  if (base.gitBranch !== null) out.gitBranch = base.gitBranch;
  if (base.agentId !== null) out.agentId = base.agentId;
  if (base.parentAgentId) out.parentAgentId = base.parentAgentId;
  Object.assign(out, body, { source: "sessiontap" });
  if (at.reconstructed) out.reconstructed = true;
  return out as MirrorRecord;
}

/** A prompt or tool results; `compactSummary` marks the summary that opens a compacted segment. */
export function userRecord(base: EnvelopeBase, at: Placement, content: unknown, compactSummary = false): MirrorRecord {
  return record("user", base, at, { message: { role: "user", content }, ...(compactSummary ? { isCompactSummary: true } : {}) });
}

/** Claude Code's compaction marker: a new root whose `logicalParentUuid` is the last record before it, the kept tail named as Claude Code does. */
export function compactBoundaryRecord(
  base: EnvelopeBase,
  at: Placement,
  logicalParentUuid: string | null,
  preservedSegment: { headUuid: string; anchorUuid: string; tailUuid: string } | null,
): MirrorRecord {
  const compactMetadata = preservedSegment ? { preservedSegment } : {};
  return record("system", base, at, { subtype: "compact_boundary", content: "Conversation compacted", level: "info", logicalParentUuid, compactMetadata });
}

/** A `role:"system"` message of `messages` (Claude Code 2.1.328 sends its environment block that way), kept as sent. */
export function systemRecord(base: EnvelopeBase, at: Placement, content: unknown): MirrorRecord {
  return record("system", base, at, { subtype: "api_message", message: { role: "system", content } });
}

/** An answer the tap saw, with its `request-id` (left out when the upstream sent none, or an empty one). */
export function assistantRecord(base: EnvelopeBase, at: Placement, message: AssistantMessage, requestId: string | null): MirrorRecord {
  return record("assistant", base, at, { ...(requestId === null || requestId === "" ? {} : { requestId }), message });
}

/** An answer rebuilt from a request's history: only what the history holds (no id, usage or requestId). */
export function reconstructedAssistantRecord(base: EnvelopeBase, at: Placement, content: unknown): MirrorRecord {
  return record("assistant", base, { ...at, reconstructed: true }, { message: { type: "message", role: "assistant", content } });
}
