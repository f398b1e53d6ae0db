// Which lineage a request belongs to, from the request alone (docs/DESIGN.md "Shapes of a conversation"). Pure.
import { isObject } from "./json.ts";

export type Route = "main" | "side" | "agent";

// The CLI's and the Agent SDK's wordings.
const AGENT_IDENTITY = /You are Claude Code|Claude Agent SDK|You are a Claude agent/;
export const COMPACTION_PREFIX = "This session is being continued from a previous conversation";
/** How Claude Code 2.1.328 starts the instruction it appends to ask for a summary. */
export const SUMMARY_INSTRUCTION_PREFIX = "CRITICAL: Respond with TEXT ONLY";

function texts(message: unknown): string[] {
  if (!isObject(message)) return [];
  const content = message.content;
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  return content.filter((b) => isObject(b) && b.type === "text" && typeof b.text === "string").map((b) => String((b as { text: string }).text));
}

export function isCompaction(messages: unknown[]): boolean {
  const first = messages.find((m) => isObject(m) && m.role !== "system");
  return isObject(first) && first.role === "user" && (texts(first)[0] ?? "").trimStart().startsWith(COMPACTION_PREFIX);
}

function isSummaryRequest(messages: unknown[]): boolean {
  const lastUser = messages.findLast((m) => isObject(m) && m.role === "user");
  return (texts(lastUser).at(-1) ?? "").trimStart().startsWith(SUMMARY_INSTRUCTION_PREFIX);
}

/**
 * In order: a subagent's header; a compaction; a summary request (side); and for Claude Code, side when it does not declare the
 * agent (tools or identity: quota probes, so a side request seen first never becomes the main chain), or declares it with no
 * tools while asking for a structured answer (the title, `{"title": …}`) or one token (the model probe of Vertex and Bedrock).
 */
export function classify(traits: {
  agentId: string | null;
  claudeCode: boolean;
  toolCount: number;
  structuredOutput?: boolean;
  maxTokens?: number | null;
  system: unknown;
  messages: unknown[];
}): { route: Route; compaction: boolean } {
  if (traits.agentId !== null) return { route: "agent", compaction: false };
  if (isCompaction(traits.messages)) return { route: "main", compaction: true };
  const declared = traits.toolCount > 0 || texts({ content: traits.system }).some((t) => AGENT_IDENTITY.test(t));
  const helper = traits.toolCount === 0 && (traits.structuredOutput === true || traits.maxTokens === 1);
  const side = isSummaryRequest(traits.messages) || (traits.claudeCode && (!declared || helper));
  return { route: side ? "side" : "main", compaction: false };
}
