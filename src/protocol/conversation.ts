/**
 * Where a conversation lives inside its session (docs/DESIGN.md "The mirror"): the main conversation, the
 * side requests, or one subagent's; the scope its record uuids are derived in; and, for the side
 * requests, the main conversation their records hang from. One rule for the tree and the shared store,
 * so the same record gets the same uuid and the same place in both. Pure.
 */
import type { Route } from "./classify.ts";

/** A conversation's place in its session. */
export interface ConversationPlace {
  /** The session's directory name (its id, when the id is a plain name). */
  sessionDir: string;
  /** Below the session: "" for the main conversation, "side", or "subagents/agent-<agent>". */
  subpath: string;
  /** The scope record uuids are derived in. */
  scope: string;
  /** `sessionDir` and `subpath` joined: one name per conversation (a path below the mirror root). */
  key: string;
}

/** A place from its parts. */
function place(sessionDir: string, subpath: string, scope: string): ConversationPlace {
  return { sessionDir, subpath, scope, key: subpath === "" ? sessionDir : `${sessionDir}/${subpath}` };
}

/**
 * The place of a route's conversation in the session `sessionDir` (`agentDir` for a subagent).
 * @example
 * placeOf("side", "s1", null); // { sessionDir: "s1", subpath: "side", scope: "s1/side", key: "s1/side" }
 */
export function placeOf(route: Route, sessionDir: string, agentDir: string | null): ConversationPlace {
  if (route === "agent") return place(sessionDir, `subagents/agent-${agentDir}`, `${sessionDir}/agent-${agentDir}`);
  if (route === "side") return place(sessionDir, "side", `${sessionDir}/side`);
  return place(sessionDir, "", sessionDir);
}

/**
 * The main conversation whose records a place's records hang from: the session's own, for its side
 * requests (a title or a summary repeats the conversation, and must not copy it); null otherwise.
 *
 * @example mainPlaceOf(placeOf("side", "s1", null)) // → the place of s1's main conversation
 */
export function mainPlaceOf(of: ConversationPlace): ConversationPlace | null {
  return of.subpath === "side" ? place(of.sessionDir, "", of.sessionDir) : null;
}
