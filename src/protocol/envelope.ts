/**
 * Shapes transcript records in Claude Code's envelope (docs/DESIGN.md "The mirror"). Pure: the caller supplies
 * uuids, parents and the time.
 */
import { type AssistantMessage } from "./sse-accumulator.ts";
import { isObject, type Json } from "./json.ts";

/** What every record of one request shares. */
export interface EnvelopeBase {
  sessionId: string | null;
  cwd: string | null;
  gitBranch: string | null;
  entrypoint: string;
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

/** Reads Claude Code's environment block: working directory, git branch and entrypoint (null when absent). */
export function readEnvironment(system: unknown, messages: unknown[]): { cwd: string | null; gitBranch: string | null; entrypoint: string | null } {
  const texts: string[] = [];
  collectText(system, texts);
  for (const m of messages) if (isObject(m) && m.role === "system") collectText(m.content, texts);
  let cwd: string | null = null;
  let gitBranch: string | null = null;
  let entrypoint: string | null = null;
  for (const text of texts) {
    cwd ??= /^[ \t]*-?[ \t]*(?:Primary working directory|Working directory):[ \t]*(\S.*?)[ \t]*$/m.exec(text)?.[1] ?? null;
    gitBranch ??= /^[ \t]*Current branch:[ \t]*(\S+)[ \t]*$/m.exec(text)?.[1] ?? null;
    entrypoint ??= /cc_entrypoint=([A-Za-z0-9_.-]+)/.exec(text)?.[1] ?? null;
  }
  return { cwd, gitBranch, entrypoint };
}

/** Gathers the text of a string or of the text blocks in a block list. */
function collectText(value: unknown, into: string[]): void {
  if (typeof value === "string") into.push(value);
  else if (Array.isArray(value)) { for (const b of value) if (isObject(b) && typeof b.text === "string") into.push(b.text); }
}

/** The keys every record starts with, in Claude Code's order. */
function head(type: string, base: EnvelopeBase, at: Placement): Json {
  const out: Json = {
    parentUuid: at.parentUuid,
    isSidechain: base.isSidechain,
    type,
    uuid: at.uuid,
    timestamp: at.timestamp,
    sessionId: base.sessionId,
    cwd: base.cwd,
    version: base.version,
    userType: "external",
    entrypoint: base.entrypoint,
  };
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

/** An assistant record from a response the tap saw, with its `request-id`. */
export function assistantRecord(base: EnvelopeBase, at: Placement, message: AssistantMessage, requestId: string | null): MirrorRecord {
  return tail({ ...head("assistant", base, at), requestId, message }, at);
}

/** An assistant record rebuilt from a request's history: only what the history holds (no id, usage, requestId). */
export function reconstructedAssistantRecord(base: EnvelopeBase, at: Placement, content: unknown): MirrorRecord {
  const message = { type: "message", role: "assistant", content };
  return tail({ ...head("assistant", base, at), message }, { ...at, reconstructed: true });
}
