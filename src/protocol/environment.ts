// Where and by what a request was sent, from the system prompt, system messages and opening user messages only, however long the
// history (docs/DESIGN.md "Where the environment travels"). Pure.
import { COMPACTION_PREFIX } from "./classify.ts";
import { isObject } from "./json.ts";

export type Environment = { cwd: string | null; gitBranch: string | null; entrypoint: string | null };

const CWD_LINE = /^[ \t]*-?[ \t]*(?:Primary working directory|Working directory):[ \t]*(\S.*?)[ \t]*$/m;
const BRANCH_LINE = /^[ \t]*Current branch:[ \t]*(\S+)[ \t]*$/m;
const ENTRYPOINT = /cc_entrypoint=([A-Za-z0-9_.-]+)/;
const REMINDER = "<system-reminder>";

function textsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (!Array.isArray(value)) return [];
  return value.filter((b) => isObject(b) && typeof b.text === "string").map((b) => (b as { text: string }).text);
}

// The lines under `# name` up to the next heading: a reminder also carries the user's CLAUDE.md, whose lines may look like anything.
function section(text: string, name: string): string | null {
  const start = new RegExp(`^# ${name}[ \\t]*$`, "m").exec(text);
  if (start === null) return null;
  const rest = text.slice(start.index + start[0].length);
  const end = /^# /m.exec(rest);
  return end === null ? rest : rest.slice(0, end.index);
}

// The first user message, and after a compaction summary the next one too.
function openingUserMessages(messages: unknown[]): unknown[] {
  const users = messages.filter((m) => isObject(m) && m.role === "user");
  const first = users[0];
  if (first === undefined) return [];
  const opensWithSummary = (textsOf((first as { content: unknown }).content)[0] ?? "").trimStart().startsWith(COMPACTION_PREFIX);
  return opensWithSummary ? users.slice(0, 2) : [first];
}

export function readEnvironment(system: unknown, messages: unknown[]): Environment {
  const out: Environment = { cwd: null, gitBranch: null, entrypoint: null };
  const own = [...textsOf(system)];
  for (const m of messages) if (isObject(m) && m.role === "system") own.push(...textsOf(m.content));
  for (const text of own) {
    out.cwd ??= CWD_LINE.exec(text)?.[1] ?? null;
    out.gitBranch ??= BRANCH_LINE.exec(text)?.[1] ?? null;
    out.entrypoint ??= ENTRYPOINT.exec(text)?.[1] ?? null;
  }
  for (const m of openingUserMessages(messages)) {
    for (const text of textsOf((m as { content: unknown }).content)) {
      if (!text.trimStart().startsWith(REMINDER)) continue;
      out.cwd ??= CWD_LINE.exec(section(text, "Environment") ?? "")?.[1] ?? null;
      out.gitBranch ??= BRANCH_LINE.exec(section(text, "gitStatus") ?? "")?.[1] ?? null;
    }
  }
  return out;
}

const CLAUDE_CLI = /^claude-cli\/(\d+\.\d+\.\d+[0-9A-Za-z.+-]*)(?:[ \t]+\(([^)]*)\))?/;

/** `claude-cli/2.1.332 (external, sdk-cli)`: the version as Claude Code writes it into its transcripts, and the entrypoint. */
export function readUserAgent(userAgent: string | null): { version: string | null; entrypoint: string | null } {
  const m = CLAUDE_CLI.exec(userAgent ?? "");
  if (m === null) return { version: null, entrypoint: null };
  const entrypoint = m[2]?.split(",")[1]?.trim() ?? "";
  return { version: m[1], entrypoint: /^[A-Za-z0-9_.-]+$/.test(entrypoint) ? entrypoint : null };
}
