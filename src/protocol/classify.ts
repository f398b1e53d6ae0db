// What a request says of itself: its lineage (docs/DESIGN.md "Shapes of a conversation"), and where and by what it was sent. Pure.
import { isObject } from "./json.ts";

export type Route = "main" | "side" | "agent";

const AGENT_IDENTITY = /You are Claude Code|Claude Agent SDK|You are a Claude agent/;
export const COMPACTION_PREFIX = "This session is being continued from a previous conversation";
export const SUMMARY_INSTRUCTION_PREFIX = "CRITICAL: Respond with TEXT ONLY";

function texts(content: unknown): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  return content.filter((b) => isObject(b) && typeof b.text === "string").map((b) => (b as { text: string }).text);
}

const contentOf = (message: unknown) => (isObject(message) ? message.content : undefined);
const opensWith = (text: string | undefined, prefix: string) => (text ?? "").trimStart().startsWith(prefix);

export function isCompaction(messages: unknown[]): boolean {
  const first = messages.find((m) => isObject(m) && m.role !== "system");
  return isObject(first) && first.role === "user" && opensWith(texts(first.content)[0], COMPACTION_PREFIX);
}

// Claude Code's side requests declare no agent (quota probes), or no tools and ask for a structured answer (the title) or one token.
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
  const declared = traits.toolCount > 0 || texts(traits.system).some((t) => AGENT_IDENTITY.test(t));
  const helper = traits.toolCount === 0 && (traits.structuredOutput === true || traits.maxTokens === 1);
  const summary = opensWith(texts(contentOf(traits.messages.findLast((m) => isObject(m) && m.role === "user"))).at(-1), SUMMARY_INSTRUCTION_PREFIX);
  return { route: summary || (traits.claudeCode && (!declared || helper)) ? "side" : "main", compaction: false };
}

export type Environment = { cwd: string | null; gitBranch: string | null; entrypoint: string | null };

const CWD_LINE = /^[ \t]*-?[ \t]*(?:Primary working directory|Working directory):[ \t]*(\S.*?)[ \t]*$/m;
const BRANCH_LINE = /^[ \t]*Current branch:[ \t]*(\S+)[ \t]*$/m;
const ENTRYPOINT = /cc_entrypoint=([A-Za-z0-9_.-]+)/;

// The lines under `# name` up to the next heading: a reminder also carries the user's CLAUDE.md, whose lines may look like anything.
function section(text: string, name: string): string {
  const start = new RegExp(`^# ${name}[ \\t]*$`, "m").exec(text);
  if (start === null) return "";
  const rest = text.slice(start.index + start[0].length);
  return rest.slice(0, /^# /m.exec(rest)?.index);
}

/** From the system prompt and messages, and a `<system-reminder>` of the first user message (and the next, after a compaction summary). */
export function readEnvironment(system: unknown, messages: unknown[]): Environment {
  const out: Environment = { cwd: null, gitBranch: null, entrypoint: null };
  const own = [...texts(system), ...messages.filter((m) => isObject(m) && m.role === "system").flatMap((m) => texts(contentOf(m)))];
  for (const text of own) {
    out.cwd ??= CWD_LINE.exec(text)?.[1] ?? null;
    out.gitBranch ??= BRANCH_LINE.exec(text)?.[1] ?? null;
    out.entrypoint ??= ENTRYPOINT.exec(text)?.[1] ?? null;
  }
  const users = messages.filter((m) => isObject(m) && m.role === "user");
  for (const m of users.slice(0, opensWith(texts(contentOf(users[0]))[0], COMPACTION_PREFIX) ? 2 : 1)) {
    for (const text of texts(contentOf(m)).filter((t) => opensWith(t, "<system-reminder>"))) {
      out.cwd ??= CWD_LINE.exec(section(text, "Environment"))?.[1] ?? null;
      out.gitBranch ??= BRANCH_LINE.exec(section(text, "gitStatus"))?.[1] ?? null;
    }
  }
  return out;
}

const CLAUDE_CLI = /^claude-cli\/(\d+\.\d+\.\d+[0-9A-Za-z.+-]*)(?:[ \t]+\(([^)]*)\))?/;

/** `claude-cli/2.1.332 (external, sdk-cli)`. */
export function readUserAgent(userAgent: string | null): { version: string | null; entrypoint: string | null } {
  const m = CLAUDE_CLI.exec(userAgent ?? "");
  if (m === null) return { version: null, entrypoint: null };
  const entrypoint = m[2]?.split(",")[1]?.trim() ?? "";
  return { version: m[1], entrypoint: /^[A-Za-z0-9_.-]+$/.test(entrypoint) ? entrypoint : null };
}
