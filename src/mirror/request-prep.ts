/**
 * The request half of a commit: who sent it, where it goes, and its messages with their identities
 * (docs/DESIGN.md "Request side"). Runs in the engine, never on the relay.
 */
import { classify, readEnvironment, readUserAgent } from "../protocol/classify.ts";
import type { CommitJob } from "../protocol/commit-job.ts";
import { isObject } from "../protocol/json.ts";
import { readRequest, UnreadableRequest } from "../protocol/lineage.ts";
import { claimsTag, dirName, type IdentityHeaders, resolveIdentity } from "../protocol/session-id.ts";

/** Fields of a read request that a commit needs, and the model the body names (null: none, as on Vertex and Bedrock). */
export type Prepared = Omit<CommitJob, "requestTimestamp" | "answer" | "kind"> & { model: string | null };

/** Why a request is not mirrored, for the events log. */
export interface Skip {
  reason: string;
  fields?: Record<string, string | number | boolean | null>;
}

/** What preparing needs besides the request. */
export interface PrepOptions {
  /** The tap's own version: the records' `version` when the user agent names no client version. */
  version: string;
  sideRequests: boolean;
  /** The root's secret fingerprints are made under (null: sessions are not bound). */
  bindingKey?: string | null;
}

/** Reads a request body into what its commit needs, or says why it is not mirrored. */
export function prepareRequest(identity: IdentityHeaders, bytes: Uint8Array, options: PrepOptions): Prepared | Skip {
  let read;
  try {
    read = readRequest(bytes);
  } catch (error) {
    if (error instanceof UnreadableRequest) return { reason: error.message, fields: { bytes: bytes.byteLength } };
    throw error;
  }
  const { rest, toolCount, messages } = read;
  const ids = resolveIdentity(identity, rest);
  const { route, compaction } = classify({
    agentId: ids.agentId,
    claudeCode: ids.claudeCode,
    toolCount,
    structuredOutput: isObject(rest.output_config) && rest.output_config.format !== undefined && rest.output_config.format !== null,
    maxTokens: typeof rest.max_tokens === "number" ? rest.max_tokens : null,
    system: rest.system,
    messages,
  });
  if (route === "side" && !options.sideRequests) return { reason: "side request (SESSIONTAP_SIDE_REQUESTS=off)" };
  const env = readEnvironment(rest.system, messages);
  const agent = readUserAgent(identity.userAgent);
  const key = options.bindingKey ?? null;
  return {
    ...(key === null ? {} : { owner: { credential: identity.credential ?? null, claims: claimsTag(rest, key) } }),
    route,
    compaction,
    sessionDir: dirName(ids.sessionId),
    agentDir: ids.agentId === null ? null : dirName(ids.agentId),
    messages,
    model: typeof rest.model === "string" ? rest.model : null,
    base: {
      sessionId: ids.sessionId,
      cwd: env.cwd,
      gitBranch: env.gitBranch,
      entrypoint: env.entrypoint ?? agent.entrypoint ?? "sessiontap",
      version: agent.version ?? options.version,
      isSidechain: route !== "main",
      agentId: ids.agentId,
      parentAgentId: ids.parentAgentId,
    },
  };
}

/** True when preparing said why the request is not mirrored. */
export function isSkip(p: Prepared | Skip): p is Skip {
  return "reason" in p;
}
