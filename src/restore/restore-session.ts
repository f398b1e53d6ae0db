// A mirrored session put back where `claude --resume ID` finds it (`restore`, the viewer, the drill): its current branch, subagents
// and title, each file judged first (docs/DESIGN.md "One judge of Claude Code's transcript").
import { dirname } from "node:path/posix";
import { jsonObject } from "../protocol/json.ts";
import { transcriptName } from "../protocol/session-id.ts";
import { readFileFacts, transcriptPathFor } from "../storage/claude-projects.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { JsonlFollower } from "../storage/jsonl-follower.ts";
import type { OtherConversations } from "../storage/mirror-reader.ts";
import { publishNew, replaceWithBackup } from "../storage/publish.ts";
import { currentUid } from "../storage/trusted-path.ts";
import { compactJson } from "../transcript/records.ts";
import { lastPromptRecord, planRestore } from "../transcript/restore-plan.ts";
import { countRecords, type Counts, countsText, generatedTitle, type SessionSummary, titleRecord } from "../transcript/summary.ts";
import { judge, type MirrorFacts, mirrorFacts, type TranscriptState, type Verdict } from "../transcript/transcript-state.ts";
import { buildTree, type Tree } from "../transcript/tree.ts";
import { plural } from "../utils/describe-error.ts";

export interface RestoreOutcome {
  sessionId: string;
  path: string;
  cwd: string;
  existing: TranscriptState;
  action: "create" | "replace" | "refuse";
  dryRun: boolean;
  backup: string | null;
  records: number;
  counts: Counts;
  leafUuid: string | null;
  title: string | null;
  subagents: SubagentOutcome[];
}

type SubagentOutcome = {
  agentId: string;
  path: string;
  existing: TranscriptState;
  action: "create" | "replace" | "keep" | "failed";
  records: number;
  backup: string | null;
  error?: string;
};

type RestoreResult = { ok: true; outcome: RestoreOutcome; problems: string[] } | { ok: false; why: string; outcome: RestoreOutcome | null; hint?: string };

type RestoreRequest = { claudeDir: string; cwd: string | null; dryRun: boolean; force: boolean; now: number };

class LeftAlone extends Error {}

async function examine(fs: FsAdapter, path: string, mirror: MirrorFacts, now: number) {
  const info = await fs.lstat(path);
  if (info !== null && !info.isFile) throw new LeftAlone(`${path} is ${info.isSymbolicLink ? "a symbolic link" : "not a regular file"}; left alone`);
  if (info !== null && info.uid >= 0 && currentUid() >= 0 && info.uid !== currentUid()) {
    throw new LeftAlone(`${path} belongs to another user (uid ${info.uid}); left alone`);
  }
  const read = info === null ? { facts: null, warning: null } : await readFileFacts(fs, path);
  if (read.warning) throw new LeftAlone(`${read.warning}; left alone`);
  return { info, facts: read.facts, verdict: judge(read.facts, mirror, { now }) };
}

/** A stub or a behind file is replaced (the old kept beside it), an intact one only with `force`. */
const actionOf = (verdict: Verdict, force: boolean) => verdict.state === "missing" ? "create" : verdict.state !== "intact" || force ? "replace" : null;

async function place(fs: FsAdapter, path: string, data: string, info: Awaited<ReturnType<typeof examine>>["info"], now: number) {
  if (info === null) await fs.mkdir(dirname(path), 0o700);
  const done = info === null ? await publishNew(fs, path, data) : await replaceWithBackup(fs, path, data, info, now);
  if (done.kind === "appeared" || done.kind === "changed") throw new LeftAlone(`${path} ${done.kind} while restoring; left alone`);
  return done.kind === "replaced" ? done.backup : null;
}

const jsonl = (records: Record<string, unknown>[]) => records.map((r) => compactJson(r) + "\n").join("");

/** A new file (0600), so Claude Code's cleanup by age does not take it again the next day; what the old one held besides its conversation stays. */
export async function restoreSession(
  fs: FsAdapter,
  session: { summary: SessionSummary; tree: Tree; others: OtherConversations },
  request: RestoreRequest,
): Promise<RestoreResult> {
  const { summary, tree, others } = session;
  const sessionId = summary.sessionId;
  const refuse = (why: string, hint?: string, outcome: RestoreOutcome | null = null): RestoreResult => ({ ok: false, outcome, why, ...(hint ? { hint } : {}) });
  if (sessionId === null || transcriptName(sessionId) === null) {
    return refuse(`session ${summary.dir} has no id Claude Code could resume by${sessionId === null ? "" : ` ("${sessionId}")`}; nothing written`);
  }
  const cwd = request.cwd ?? summary.cwd;
  if (cwd === null) {
    const why = `the mirror does not know the working directory of ${sessionId} (no request named it); pass --cwd DIR (where you run claude); nothing written`;
    return refuse(why, `sessiontap restore ${sessionId} --cwd DIR`);
  }
  const plan = planRestore(tree, { sessionId, cwd });
  if (plan.records.length === 0) return refuse(`session ${sessionId} has no user or assistant record to restore`);
  const path = await transcriptPathFor(fs, request.claudeDir, cwd, sessionId);
  const title = generatedTitle(others.side);
  const mirror = mirrorFacts(tree, [...others.side, ...others.agents.flatMap((a) => a.records)]);
  const found = await examine(fs, path, mirror, request.now).catch((error) => error instanceof LeftAlone ? error : Promise.reject(error));
  if (found instanceof LeftAlone) return refuse(`${found.message}, nothing written`);
  const { info, facts, verdict } = found;
  const besides = info === null ? { kept: [], foreign: null } : await besidesConversation(fs, path, sessionId);
  if (besides.foreign !== null && !request.force) {
    const why = `${path} holds records of another session (${besides.foreign.slice(0, 64)}); left alone.`;
    return refuse(why, `Look at it first; replace it anyway (a backup is kept beside it): sessiontap restore ${sessionId} --force`);
  }
  const outcome: RestoreOutcome = {
    sessionId,
    path,
    cwd,
    existing: verdict.state,
    action: actionOf(verdict, request.force) ?? "refuse",
    dryRun: request.dryRun,
    backup: null,
    records: plan.records.length,
    counts: countRecords(plan.records),
    leafUuid: plan.leafUuid,
    title,
    subagents: [],
  };
  if (outcome.action === "refuse") {
    const held = plural(facts?.records ?? 0, "user/assistant record") + (facts?.torn ? "; its last line is torn, a half-written record" : "");
    const what = verdict.extra > 0
      ? `holds ${plural(verdict.extra, "prompt or answer", "prompts or answers")} the mirror does not`
      : "already holds every prompt and answer of the mirror's current branch";
    const hint = `Compare with: sessiontap show ${sessionId}\n  Replace it anyway (a backup is kept beside it): sessiontap restore ${sessionId} --force`;
    return refuse(`${path} ${what} (${held}); left alone.`, hint, outcome);
  }
  if (!request.dryRun) {
    const last = lastPromptRecord(sessionId, plan.records);
    const data = [...besides.kept, ...(title === null ? [] : [titleRecord(sessionId, title)]), ...plan.records, ...(last === null ? [] : [last])];
    try {
      outcome.backup = await place(fs, path, jsonl(data), info, request.now);
    } catch (error) {
      if (!(error instanceof LeftAlone)) return refuse(`cannot write ${path}: ${(error as Error).message.split("\n")[0]}`, undefined, outcome);
      return refuse(`${error.message}, nothing replaced. Run restore again to look afresh.`, undefined, { ...outcome, action: "refuse" });
    }
  }
  const subagents = await restoreSubagents(fs, others, { sessionId, cwd }, path, request);
  outcome.subagents = subagents.outcomes;
  const problems = outcome.subagents.filter((a) => a.action === "failed" && !request.dryRun).map((a) =>
    `subagent ${a.agentId} of ${sessionId} not restored: ${a.error}`
  );
  if (subagents.unnamed > 0) {
    problems.push(`${plural(subagents.unnamed, "subagent conversation")} of ${sessionId} carry no id Claude Code could name a file by; not restored`);
  }
  return { ok: true, outcome, problems };
}

const OF_THE_OLD_CHAIN = new Set(["last-prompt", "api-request", "api-request-blob", "api-request-shape", "api-request-resumed", "queue-operation"]);

/** Records without a `uuid` (a title, a tag; at most 1 MiB) but the old chain's bookkeeping, and the first other session named. */
async function besidesConversation(fs: FsAdapter, path: string, sessionId: string): Promise<{ kept: Record<string, unknown>[]; foreign: string | null }> {
  const kept: Record<string, unknown>[] = [];
  let foreign: string | null = null;
  let bytes = 0;
  const decoder = new TextDecoder();
  await new JsonlFollower(path).read(fs, (line) => {
    if (line.oversized) return; // a line too long to read is a message, never a title or a mode
    const r = jsonObject(decoder.decode(line.bytes));
    if (r === null) return; // a torn line: the backup keeps it
    if (typeof r.sessionId === "string" && r.sessionId !== sessionId) foreign ??= r.sessionId;
    else if (r.uuid === undefined && !OF_THE_OLD_CHAIN.has(String(r.type)) && bytes + line.bytes.length <= 1 << 20) {
      kept.push(r);
      bytes += line.bytes.length;
    }
  });
  return { kept: foreign === null ? kept : kept.filter((r) => r.sessionId === undefined || r.sessionId === sessionId), foreign };
}

export function describeRestore(outcome: RestoreOutcome): string[] {
  const what = countsText(outcome.counts);
  const thing = outcome.existing === "stub" ? "stub" : outcome.existing === "behind" ? "transcript (behind the mirror)" : "transcript";
  if (outcome.dryRun) {
    const lines = outcome.action === "create"
      ? [`Would create ${outcome.path}`, `  with ${what} of session ${outcome.sessionId}.`]
      : [`Would back up the ${thing} at ${outcome.path}`, `  as ${outcome.path}.bak-<UTC time> and replace it with ${what} of session ${outcome.sessionId}.`];
    for (const a of outcome.subagents) {
      lines.push(`  and subagent ${a.agentId}: ${a.action === "keep" ? "kept as it is (it holds a conversation)" : `${a.action} ${a.path}`}`);
    }
    return lines;
  }
  const lines = [`Restored session ${outcome.sessionId}: ${what}${outcome.title === null ? "" : `, titled "${outcome.title}"`}.`, `  written  ${outcome.path}`];
  if (outcome.backup !== null) lines.push(`  backup   ${outcome.backup} (the ${thing} that was there)`);
  for (const a of outcome.subagents) {
    if (a.action === "create" || a.action === "replace") {
      lines.push(`  subagent ${a.path} (${a.records} records)${a.backup === null ? "" : `, backup ${a.backup}`}`);
    } else if (a.action === "keep") lines.push(`  subagent ${a.path} kept: it holds a conversation (--force replaces it, with a backup)`);
  }
  lines.push("", "Resume it with:", `  ${resumeCommand(outcome)}`);
  return lines;
}

/** `cd CWD && claude --resume ID`; a cwd holding a NUL names no directory (a shell would cut it there), so then the resume alone. */
export function resumeCommand(outcome: { cwd: string; sessionId: string }): string {
  const resume = `claude --resume ${outcome.sessionId}`;
  return outcome.cwd.includes("\0") ? resume : `cd ${shellQuote(outcome.cwd)} && ${resume}`;
}

/** A cwd comes from a request: a control character in it is written `$'\xHH'` (bash, zsh), so printing cannot drive the terminal. */
function shellQuote(path: string): string {
  if (/^[A-Za-z0-9_./-]+$/.test(path)) return path;
  // deno-lint-ignore no-control-regex -- control characters are what is escaped here
  if (!/[\x00-\x1f\x7f-\x9f]/.test(path)) return `'${path.replace(/'/g, `'\\''`)}'`;
  // Each byte of the character's UTF-8 form: bash's `\xHH` is one byte (U+0085 on disk is C2 85).
  const hex = (c: string) => [...new TextEncoder().encode(c)].map((b) => `\\x${b.toString(16).padStart(2, "0")}`).join("");
  // deno-lint-ignore no-control-regex -- as above
  return `$'${path.replace(/[\\']/g, (c) => `\\${c}`).replace(/[\x00-\x1f\x7f-\x9f]/g, hex)}'`;
}

/** Where Claude Code 2.1.328 keeps them, `<project>/<session>/subagents/agent-<id>.jsonl`; never throws. */
async function restoreSubagents(fs: FsAdapter, others: OtherConversations, target: { sessionId: string; cwd: string }, mainPath: string, o: RestoreRequest) {
  const outcomes: SubagentOutcome[] = [];
  let unnamed = 0;
  for (const agent of others.agents) {
    const fromRecords = agent.records.map((r) => r.agentId).find((id): id is string => typeof id === "string" && id !== "");
    const agentId = fromRecords ?? (agent.dir.startsWith("agent-") ? agent.dir.slice("agent-".length) : agent.dir);
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(agentId)) {
      unnamed++;
      continue;
    }
    const tree = buildTree(agent.records);
    const { records } = planRestore(tree, { ...target, agentId });
    if (records.length === 0) continue;
    const path = `${mainPath.slice(0, -".jsonl".length)}/subagents/agent-${agentId}.jsonl`;
    const outcome: SubagentOutcome = { agentId, path, existing: "missing", action: "create", records: records.length, backup: null };
    outcomes.push(outcome);
    try {
      const { info, verdict } = await examine(fs, path, mirrorFacts(tree), o.now);
      outcome.existing = verdict.state;
      outcome.action = actionOf(verdict, o.force) ?? "keep";
      if (!o.dryRun && outcome.action !== "keep") outcome.backup = await place(fs, path, jsonl(records), info, o.now);
    } catch (error) {
      outcome.action = "failed";
      outcome.error = (error as Error).message.split("\n")[0];
    }
  }
  return { outcomes, unnamed };
}
