// Claude Code's injected context read back from the words it sent into the `attachment` records it keeps, by the template of each
// kind (docs/DESIGN.md "Restore"); an unknown piece keeps its text. Pure.

const REMINDER_OPEN = "<system-reminder>\n";
const REMINDER_CLOSE = "\n</system-reminder>";

/** `attachment`: the kind and what it was made from; `rendered`: its text with tags; attribution rides `besideToolResult`. */
export interface ContextPiece {
  attachment: Record<string, unknown>;
  renderedRole: "user" | "system";
  besideToolResult?: true;
  rendered: string;
}

export const UNKNOWN_KIND = "sessiontap_context";

type Kind = { type: string; role: "user" | "system"; besideToolResult?: true; opens: string; read(inner: string): Record<string, unknown> | null };

const ENV_HEAD = "# Environment\nYou have been invoked in the following environment: \n";
const WORKTREE_LINE = "This is a git worktree";
const DEFERRED_HEAD = /^The following deferred tools are now available via \S+?\. [^\n]*:\n/;
const AGENTS_HEAD = "Available agent types for the Agent tool:\n";
const AGENTS_NOTE = "When you launch multiple agents for independent work, send them in a single message with multiple tool uses so they run concurrently.";
const SKILLS_HEAD = "The following skills are available for use with the Skill tool:\n\n";
const CONTEXT_HEAD = "As you answer the user's questions, you can use the following context:\n";
const CONTEXT_FOOT =
  "\n\nClaude Code attached this context automatically; it isn't part of the user's message. It describes the user's own account and workspace, so they don't need it reported back.";
const CONTEXT_KEYS = ["userEmail", "attachedProject", "gitStatus", "perforceMode"];
const AUTO_MODE_BASH_FIRST =
  "While auto mode is active:\n\nYou can do much of your work through the Bash tool when it is the simpler route: read files with cat, head, or sed -n, search with grep and find, and make small, mechanical file changes with sed, heredocs, or short scripts instead of the dedicated Read, Edit, or Write tools. The choice is yours: prefer Edit or Write when a shell edit would be fragile, such as exact or multi-line replacements, or sed/awk flags that differ between GNU and BSD/macOS.";
const ATTRIBUTION_HEAD = "Attribution for git commits and pull requests you create from here on (";
const MANAGED = "these lines are set by the user's organization's managed settings";
const COMMIT_LINE = "- End git commit messages with:\n";
const PR_LINE = "- End pull request descriptions with:\n";

const readTokens = (t: string) => (/^<total_tokens>\d+ tokens left<\/total_tokens>$/.test(t) ? { text: t } : null);
const readDate = (t: string) => (/^Today's date is \d{4}-\d{2}-\d{2}\.$/.test(t) ? { date: t.slice("Today's date is ".length, -1) } : null);

const KINDS: Kind[] = [
  { type: "environment", role: "system", opens: ENV_HEAD, read: readEnvironment },
  { type: "model", role: "system", opens: "You are powered by the model ", read: readModel },
  { type: "deferred_tools_delta", role: "system", opens: "The following deferred tools are now available via ", read: readDeferredTools },
  { type: "agent_listing_delta", role: "system", opens: AGENTS_HEAD, read: readAgents },
  { type: "skill_listing", role: "system", opens: SKILLS_HEAD, read: readSkills },
  // Its words depend on settings they do not all name: only the renderings seen are read back.
  { type: "auto_mode", role: "system", opens: "While auto mode is active:", read: (t) => (t === AUTO_MODE_BASH_FIRST ? AUTO_MODE_BASH_FIRST_MADE : null) },
  { type: "total_tokens_reminder", role: "system", opens: "<total_tokens>", read: readTokens },
  { type: "session_context", role: "user", opens: CONTEXT_HEAD, read: readSessionContext },
  { type: "date", role: "system", opens: "Today's date is ", read: readDate },
  { type: "remote_session_change", role: "user", besideToolResult: true, opens: ATTRIBUTION_HEAD, read: readAttribution },
];

const AUTO_MODE_BASH_FIRST_MADE = {
  autoModeConsentFlow: false,
  finishExposedWork: false,
  bashFirst: true,
  bashFirstSteer: "relaxed",
  steerOnly: true,
  bypass: false,
};

function readModel(t: string): Record<string, unknown> | null {
  const m = /^You are powered by the model (?:named (.+?)\. The exact model ID is (\S+?)\.|(\S+?)\.)(?: Assistant knowledge cutoff is (.+)\.)?$/.exec(t);
  return m === null ? null : { identity: { modelId: m[2] ?? m[3], marketingName: m[1] ?? null, knowledgeCutoff: m[4] ?? null }, text: t };
}

function readDeferredTools(t: string): Record<string, unknown> | null {
  const head = DEFERRED_HEAD.exec(t);
  if (head === null) return null;
  const lines = t.slice(head[0].length).split("\n\n")[0].split("\n").filter((l) => l !== "");
  const none = { removedNames: [], wireHiddenNames: [], readdedNames: [], pendingMcpServers: [], needsAuthMcpServers: [], failedMcpServers: [] };
  return { addedNames: lines.map((l) => l.split(":")[0]), addedLines: lines, ...none };
}

function readAgents(t: string): Record<string, unknown> | null {
  const [list, ...rest] = t.slice(AGENTS_HEAD.length).split("\n\n");
  const lines = list.split("\n");
  const types = lines.map((l) => /^- ([^:]+):/.exec(l)?.[1]);
  if (types.some((x) => x === undefined) || rest.some((p) => p !== AGENTS_NOTE)) return null;
  return { addedTypes: types, addedLines: lines, removedTypes: [], isInitial: true, showConcurrencyNote: rest.length > 0 };
}

function readSkills(t: string): Record<string, unknown> | null {
  const content = t.slice(SKILLS_HEAD.length);
  const names = [...content.matchAll(/^- ([^:\s]+):/gm)].map((m) => m[1]);
  return names.length === 0 ? null : { content, skillCount: names.length, isInitial: true, names };
}

function readEnvironment(t: string): Record<string, unknown> | null {
  const lines = t.slice(ENV_HEAD.length).split("\n");
  const value = (key: string) => lines.find((l) => l.startsWith(` - ${key}: `))?.slice(key.length + 5);
  const platform = value("Platform");
  const git = value("Is a git repository");
  if (platform === undefined) return null;
  const at = lines.indexOf(" - Additional working directories:");
  const more: string[] = [];
  for (let i = at + 1; at >= 0 && i < lines.length && lines[i].startsWith("  - "); i++) more.push(lines[i].slice(4));
  const optional = (key: string, name: string) => (value(key) === undefined ? {} : { [name]: value(key) });
  const snapshot = {
    ...optional("Primary working directory", "workingDirectory"),
    isWorktree: lines.some((l) => l.startsWith(` - ${WORKTREE_LINE}`)),
    isGitRepo: git === "true",
    additionalWorkingDirectories: more,
    platform,
    ...optional("Shell", "shell"),
    ...optional("OS Version", "osVersion"),
  };
  return { snapshot };
}

function readSessionContext(t: string): Record<string, unknown> | null {
  if (!t.endsWith(CONTEXT_FOOT)) return null;
  const body = t.slice(CONTEXT_HEAD.length, t.length - CONTEXT_FOOT.length);
  const heading = new RegExp(`(?:^|\\n)# (${CONTEXT_KEYS.join("|")})\\n`, "g");
  const marks = [...body.matchAll(heading)];
  if (marks.length === 0 || marks[0].index !== 0) return null;
  const context: Record<string, string> = {};
  marks.forEach((m, i) => (context[m[1]] = body.slice(m.index! + m[0].length, marks[i + 1]?.index ?? body.length)));
  return { context };
}

function readAttribution(t: string): Record<string, unknown> | null {
  const commitAt = t.indexOf(COMMIT_LINE);
  const prAt = t.indexOf(PR_LINE);
  if (commitAt < 0 && prAt < 0) return null;
  const commit = commitAt < 0 ? "" : t.slice(commitAt + COMMIT_LINE.length, prAt > commitAt ? prAt - 1 : t.length);
  const pr = prAt < 0 ? "" : t.slice(prAt + PR_LINE.length);
  const managed = t.slice(0, t.indexOf("):\n")).includes(MANAGED);
  return { url: null, commit, pr, sendUserFileHint: false, managedCommit: managed, managedPr: managed };
}

export function reminderInner(text: string): string | null {
  if (!text.startsWith(REMINDER_OPEN) || !text.endsWith(REMINDER_CLOSE)) return null;
  const inner = text.slice(REMINDER_OPEN.length, -REMINDER_CLOSE.length);
  return inner.includes(REMINDER_CLOSE) ? null : inner;
}

export function contextPiece(inner: string, sentAs: "user" | "system"): ContextPiece {
  const rendered = REMINDER_OPEN + inner + REMINDER_CLOSE;
  for (const kind of KINDS) {
    if (!inner.startsWith(kind.opens)) continue;
    const made = kind.read(inner);
    if (made === null) break;
    return { attachment: { type: kind.type, ...made }, renderedRole: kind.role, rendered, ...(kind.besideToolResult ? { besideToolResult: true } : {}) };
  }
  return { attachment: { type: UNKNOWN_KIND }, renderedRole: sentAs, rendered };
}

/** Claude Code joins a system message's pieces with a blank line: cut where one precedes a known kind's opening words. */
export function systemPieces(text: string): ContextPiece[] {
  const cuts = [0];
  for (let at = text.indexOf("\n\n"); at >= 0; at = text.indexOf("\n\n", at + 1)) {
    if (KINDS.some((k) => k.role === "system" && text.startsWith(k.opens, at + 2))) cuts.push(at + 2);
  }
  return cuts.map((from, i) => contextPiece(text.slice(from, i + 1 < cuts.length ? cuts[i + 1] - 2 : text.length), "system"));
}

/** In the order of KINDS, other kinds keeping their place: the wire no longer says which came first once the model takes system turns. */
export function interleave(user: ContextPiece[], system: ContextPiece[]): ContextPiece[] {
  const ranked = (list: ContextPiece[]) => {
    let last = -1;
    return list.map((piece) => ({ piece, rank: last = Math.max(last, KINDS.findIndex((k) => k.type === piece.attachment.type)) }));
  };
  // A stable sort of the two runs, each in rank order already: a merge, the user's piece first where they tie.
  return [...ranked(user), ...ranked(system)].sort((a, b) => a.rank - b.rank).map((r) => r.piece);
}
