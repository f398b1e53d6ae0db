/**
 * Which lineage a request belongs to (docs/DESIGN.md "Shapes of a conversation"). Pure and side-effect free:
 * it reads only the request.
 *
 * The rule, in order:
 * 1. `x-claude-code-agent-id` → the subagent's own lineage (`subagents/agent-<id>/`).
 * 2. The first message begins "This session is being continued from a previous conversation" → the main
 *    conversation, as a compaction (a boundary, then the new segment).
 * 3. The last user message ends in Claude Code's summarising instruction → a side request: the exchange
 *    goes to `side/`; the main chain gains no branch and no copy of what it repeats.
 * 4. A Claude Code request (it carries `x-claude-code-session-id`, or a `claude-cli` user agent) that does
 *    not declare the agent — no tools and no agent identity in its system prompt — → a side request
 *    (quota probes): Claude Code declares its main conversation by sending the agent's system prompt and
 *    tool set, so a side request seen first never becomes the main chain.
 * 5. A Claude Code request with no tools that asks for a structured answer (an `output_config.format`)
 *    → a side request: that is how Claude Code's helpers ask (the session title comes back as
 *    `{"title": …}`). Their system prompt opens with the agent's identity line too, so rule 4 alone would
 *    put the title exchange in the main chain as a second conversation.
 * 6. A Claude Code request with no tools that allows a one-token answer (`max_tokens: 1`) → a side request:
 *    Claude Code's model probe, which on Vertex AI and Bedrock, holding real credentials, asks each model
 *    for one token before a session's first turn; it opens with the agent's identity line too, so rule 4
 *    alone would make the probe the main chain and the real conversation a second one.
 * 7. Everything else → the main conversation (other clients are mirrored as they come).
 */

/** The lineage a request is mirrored into. */
import { isObject } from "./json.ts";
export type Route = "main" | "side" | "agent";

/** What classification reads of a request. */
export interface RequestTraits {
  agentId: string | null;
  claudeCode: boolean;
  toolCount: number;
  /** The request asks for a structured answer (`output_config.format`). */
  structuredOutput?: boolean;
  /** The body's `max_tokens`, when it is a number. */
  maxTokens?: number | null;
  system: unknown;
  messages: unknown[];
}

/** How Claude Code's agent system prompt introduces the agent (CLI and Agent SDK wordings). */
const AGENT_IDENTITY = /You are Claude Code|Claude Agent SDK|You are a Claude agent/;

/** How Claude Code opens a compacted conversation. */
export const COMPACTION_PREFIX = "This session is being continued from a previous conversation";
/** How Claude Code 2.1.328 starts the instruction it appends to ask for a summary. */
export const SUMMARY_INSTRUCTION_PREFIX = "CRITICAL: Respond with TEXT ONLY";

/** The texts of a message's content, in order. */
function texts(message: unknown): string[] {
  if (!isObject(message)) return [];
  const content = message.content;
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  return content.filter((b) => isObject(b) && b.type === "text" && typeof b.text === "string").map((b) => String((b as { text: string }).text));
}

/** True when the conversation opens with a compaction summary. */
export function isCompaction(messages: unknown[]): boolean {
  const first = messages.find((m) => isObject(m) && m.role !== "system");
  return isObject(first) && first.role === "user" && (texts(first)[0] ?? "").trimStart().startsWith(COMPACTION_PREFIX);
}

/** True when the last user message ends in the instruction asking for a summary of the conversation. */
export function isSummaryRequest(messages: unknown[]): boolean {
  const lastUser = [...messages].reverse().find((m) => isObject(m) && m.role === "user");
  const last = texts(lastUser).at(-1) ?? "";
  return last.trimStart().startsWith(SUMMARY_INSTRUCTION_PREFIX);
}

/** Classifies a request: its route, and whether it opens a compacted segment. */
export function classify(traits: RequestTraits): { route: Route; compaction: boolean } {
  if (traits.agentId !== null) return { route: "agent", compaction: false };
  if (isCompaction(traits.messages)) return { route: "main", compaction: true };
  if (isSummaryRequest(traits.messages)) return { route: "side", compaction: false };
  if (traits.claudeCode && !declaresAgent(traits)) return { route: "side", compaction: false };
  if (traits.claudeCode && traits.toolCount === 0 && traits.structuredOutput === true) return { route: "side", compaction: false };
  if (traits.claudeCode && traits.toolCount === 0 && traits.maxTokens === 1) return { route: "side", compaction: false };
  return { route: "main", compaction: false };
}

/** True when the request carries the agent's tool set or its identity in the system prompt. */
export function declaresAgent(traits: Pick<RequestTraits, "toolCount" | "system">): boolean {
  if (traits.toolCount > 0) return true;
  return texts({ content: traits.system }).some((t) => AGENT_IDENTITY.test(t));
}
