/**
 * The request half of a commit: who sent it, where it goes, and its messages with their identities, read
 * in proportion to what is new (docs/DESIGN.md "Request side"). Runs in the engine, never on the relay.
 */
import { classify } from "../protocol/classify.ts";
import { claimsTag } from "../protocol/credential.ts";
import type { CommitJob } from "../protocol/commit-job.ts";
import { readEnvironment, readUserAgent } from "../protocol/environment.ts";
import { isObject } from "../protocol/json.ts";
import { RequestReader, UnreadableRequest } from "../protocol/request-reader.ts";
import { dirName, type IdentityHeaders, resolveIdentity } from "../protocol/session-id.ts";

/** Fields of a read request that a commit needs. */
export type Prepared = Omit<CommitJob, "requestTimestamp" | "answer" | "kind">;

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

/** The conversation a body belongs to, for reusing its earlier bodies (null: nothing to reuse by). */
function readerKey(identity: IdentityHeaders): string | null {
  if (identity.session === null) return null;
  return `${identity.session}\u0000${identity.agent ?? ""}`;
}

/** Reads a request body into what its commit needs, or says why it is not mirrored. */
export function prepareRequest(reader: RequestReader, identity: IdentityHeaders, bytes: Uint8Array, options: PrepOptions): Prepared | Skip {
  let read;
  try {
    read = reader.read(readerKey(identity), bytes);
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
