/**
 * Where a conversation lives inside its session (SPEC §4 "Tree"): the main conversation, the side
 * requests, or one subagent's; and the scope its record uuids are derived in. One rule for the tree and
 * the shared store, so the same record gets the same uuid in both. Pure.
 */
import type { Route } from "./classify.ts";

/** A conversation's place: `subpath` below the session ("" for the main one) and its uuid scope. */
export interface ConversationPlace {
  subpath: string;
  scope: string;
}

/** The place of a route's conversation in the session `sessionDir` (agentDir for a subagent). */
export function conversationOf(route: Route, sessionDir: string, agentDir: string | null): ConversationPlace {
  if (route === "agent") return { subpath: `subagents/agent-${agentDir}`, scope: `${sessionDir}/agent-${agentDir}` };
  if (route === "side") return { subpath: "side", scope: `${sessionDir}/side` };
  return { subpath: "", scope: sessionDir };
}
