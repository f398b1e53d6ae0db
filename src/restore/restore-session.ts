/**
 * Putting a mirrored session back where `claude --resume ID` finds it:
 * `<claude-dir>/projects/<encoded cwd>/<id>.jsonl` (transcript/restore-plan.ts says what is written,
 * transcript/project-dir.ts how the directory is named). `sessiontap restore` and the viewer's "Restore into
 * Claude Code" both run this, so they plan, refuse and write alike.
 *
 * What is already there decides: nothing → the file is created; a stub (no user or assistant record) or an
 * empty file → backed up as `<name>.bak-<UTC timestamp>` and replaced; a transcript with content → left
 * alone unless `force`, which backs it up first (a torn last line is named: force fixes it). What the
 * replaced file holds besides its conversation (a title, a tag, kinds of record not known here) is kept in
 * the new one. Publication is atomic and never clobbers a file that appeared or changed meanwhile (publish.ts); the file is 0600,
 * new directories 0700, and new, so its modification time is now: Claude Code's cleanup (by modification
 * time) does not take it again the next day.
 *
 * With the main conversation go the session's subagents (restore-subagents.ts) and, when the mirror saw
 * Claude Code name the session, its `ai-title` record (transcript/title.ts).
 */
import { transcriptName } from "../protocol/id-name.ts";
import { compactJson } from "../transcript/json-text.ts";
import { isObject } from "../protocol/json.ts";
import { lastPromptRecord, planRestore } from "../transcript/restore-plan.ts";
import { countRecords, type Counts, countsText, generatedTitle, type SessionSummary, titleRecord } from "../transcript/summary.ts";
import { judge, mirrorFacts, type TranscriptState } from "../transcript/transcript-state.ts";
import type { Tree } from "../transcript/tree.ts";
import { readFileFacts, transcriptPathFor } from "../storage/claude-projects.ts";
import { JsonlFollower } from "../storage/jsonl-follower.ts";
import { currentUid } from "../storage/trusted-path.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import type { OtherConversations } from "../storage/mirror-reader.ts";
import { type Published, publishNew, replaceWithBackup } from "../storage/publish.ts";
import { planSubagents, type SubagentOutcome, writeSubagents } from "./restore-subagents.ts";
import { plural } from "../utils/plural.ts";

/** What restore did or would do (`restore --json` prints it). */
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
  /** The title Claude Code gave the session, when the mirror saw it (written as its `ai-title` record). */
  title: string | null;
  subagents: SubagentOutcome[];
}

/**
 * The result: done (or would be), or refused/failed with one line saying why (and the outcome when one
 * was planned). `problems`: subagents that could not be restored, each one line (the command exits 1).
 */
export type RestoreResult =
  | { ok: true; outcome: RestoreOutcome; problems: string[] }
  | { ok: false; why: string; outcome: RestoreOutcome | null; hint?: string };

/** What to restore, and how. */
export interface RestoreRequest {
  claudeDir: string;
  /** The working directory to restore into (null: the one the mirror recorded). */
  cwd: string | null;
  dryRun: boolean;
  force: boolean;
  /** The time of a backup's name. */
  now: number;
}

/** Plans the restore of a session's current branch (with its subagents and title) and, unless a dry run, writes it. */
export async function restoreSession(
  fs: FsAdapter,
  session: { summary: SessionSummary; tree: Tree; others: OtherConversations },
  request: RestoreRequest,
): Promise<RestoreResult> {
  const { summary, tree } = session;
  const sessionId = summary.sessionId;
  if (sessionId === null || transcriptName(sessionId) === null) {
    return {
      ok: false,
      outcome: null,
      why: `session ${summary.dir} has no id Claude Code could resume by${sessionId === null ? "" : ` ("${sessionId}")`}; nothing written`,
    };
  }
  const cwd = request.cwd ?? summary.cwd;
  if (cwd === null) {
    return {
      ok: false,
      outcome: null,
      why: `the mirror does not know the working directory of ${sessionId} (no request named it); pass --cwd DIR (where you run claude); nothing written`,
      hint: `sessiontap restore ${sessionId} --cwd DIR`,
    };
  }
  const plan = planRestore(tree, { sessionId, cwd });
  if (plan.records.length === 0) return { ok: false, outcome: null, why: `session ${sessionId} has no user or assistant record to restore` };
  const path = await transcriptPathFor(fs, request.claudeDir, cwd, sessionId);
  const title = generatedTitle(session.others.side);
  const subagents = planSubagents(session.others, { sessionId, cwd }, path);
  const info = await fs.lstat(path);
  if (info !== null && !info.isFile) {
    return { ok: false, outcome: null, why: `${path} is ${info.isSymbolicLink ? "a symbolic link" : "not a regular file"}; left alone, nothing written` };
  }
  if (info !== null && info.uid >= 0 && currentUid() >= 0 && info.uid !== currentUid()) {
    return { ok: false, outcome: null, why: `${path} belongs to another user (uid ${info.uid}); left alone, nothing written` };
  }
  // Read with bounded memory, as a regular file only (a 2 GiB transcript, a FIFO swapped in: docs/RELIABILITY.md "Trust boundaries").
  const read = info === null ? { facts: null, warning: null } : await readFileFacts(fs, path);
  if (read.warning) return { ok: false, outcome: null, why: `${read.warning}; left alone, nothing written` };
  const others = [...session.others.side, ...session.others.agents.flatMap((a) => a.records)];
  const verdict = judge(read.facts, mirrorFacts(tree, others), { now: request.now });
  const existing = verdict.state;
  const besides = info === null ? { kept: [], foreign: null } : await besidesConversation(fs, path, sessionId);
  // A file under this session's name that holds another session's records is not this session's to replace.
  if (besides.foreign !== null && !request.force) {
    return {
      ok: false,
      outcome: null,
      why: `${path} holds records of another session (${besides.foreign.slice(0, 64)}); left alone.`,
      hint: `Look at it first; replace it anyway (a backup is kept beside it): sessiontap restore ${sessionId} --force`,
    };
  }
  const action = existing === "missing" ? "create" : existing !== "intact" || request.force ? "replace" : "refuse";
  const outcome: RestoreOutcome = {
    sessionId,
    path,
    cwd,
    existing,
    action,
    dryRun: request.dryRun,
    backup: null,
    records: plan.records.length,
    counts: countRecords(plan.records),
    leafUuid: plan.leafUuid,
    title,
    subagents: [],
  };
  if (action === "refuse") {
    const held = `${plural(read.facts?.records ?? 0, "user/assistant record")}${read.facts?.torn ? "; its last line is torn, a half-written record" : ""}`;
    return {
      ok: false,
      outcome,
      why: verdict.extra > 0
        ? `${path} holds ${plural(verdict.extra, "prompt or answer", "prompts or answers")} the mirror does not (${held}); left alone.`
        : `${path} already holds every prompt and answer of the mirror's current branch (${held}); left alone.`,
      hint: `Compare with: sessiontap show ${sessionId}\n  Replace it anyway (a backup is kept beside it): sessiontap restore ${sessionId} --force`,
    };
  }
  const unnamed = subagents.unnamed === 0 ? [] : [
    `${plural(subagents.unnamed, "subagent conversation")} of ${sessionId} carry no id Claude Code could name a file by; not restored`,
  ];
  if (request.dryRun) {
    outcome.subagents = await writeSubagents(fs, subagents.planned, { force: request.force, dryRun: true, now: request.now });
    return { ok: true, outcome, problems: unnamed };
  }
  const last = lastPromptRecord(sessionId, plan.records);
  const data = [...besides.kept, ...(title === null ? [] : [titleRecord(sessionId, title)]), ...plan.records, ...(last === null ? [] : [last])]
    .map((r) => compactJson(r) + "\n").join("");
  let published: Published;
  try {
    if (info === null) {
      await fs.mkdir(path.slice(0, path.lastIndexOf("/")), 0o700);
      published = await publishNew(fs, path, data);
    } else {
      published = await replaceWithBackup(fs, path, data, info, request.now);
    }
  } catch (error) {
    return { ok: false, outcome, why: `cannot write ${path}: ${(error as Error).message.split("\n")[0]}` };
  }
  if (published.kind === "appeared" || published.kind === "changed") {
    outcome.action = "refuse";
    return {
      ok: false,
      outcome,
      why: `${path} ${published.kind === "appeared" ? "appeared" : "changed"} while restoring; left alone, nothing replaced. Run restore again to look afresh.`,
    };
  }
  if (published.kind === "replaced") outcome.backup = published.backup;
  outcome.subagents = await writeSubagents(fs, subagents.planned, { force: request.force, dryRun: false, now: request.now });
  const failed = outcome.subagents.filter((a) => a.action === "failed").map((a) => `subagent ${a.agentId} of ${sessionId} not restored: ${a.error}`);
  return { ok: true, outcome, problems: [...failed, ...unnamed] };
}

/** Claude Code's request bookkeeping for a conversation: tied to the records being replaced, so not carried over. */
const OF_THE_OLD_CHAIN = new Set(["last-prompt", "api-request", "api-request-blob", "api-request-shape", "api-request-resumed", "queue-operation"]);

/** Most bytes of a replaced file's other records carried into the restored one (a stub's are a few hundred). */
const CARRY_AT_MOST = 1 << 20;

/**
 * What a replaced transcript holds besides its conversation, read with bounded memory: the records a
 * restore keeps — every record that is not part of its conversation (no `uuid`): a title the user gave it,
 * a tag, its modes, kinds of record this release does not know; not the bookkeeping of the conversation
 * being replaced, nor anything of another session — and the first other session any record names. A
 * restore never drops what it does not understand; the backup keeps the whole file besides.
 */
async function besidesConversation(fs: FsAdapter, path: string, sessionId: string): Promise<{ kept: Record<string, unknown>[]; foreign: string | null }> {
  const kept: Record<string, unknown>[] = [];
  let foreign: string | null = null;
  let bytes = 0;
  const decoder = new TextDecoder();
  await new JsonlFollower(path).read(fs, (line) => {
    if (line.oversized) return; // a line too long to read is a message, never a title or a mode
    let r: unknown;
    try {
      r = JSON.parse(decoder.decode(line.bytes));
    } catch {
      return; // a torn line: the backup keeps it
    }
    if (!isObject(r)) return;
    if (typeof r.sessionId === "string" && r.sessionId !== sessionId) foreign ??= r.sessionId;
    else if (r.uuid === undefined && !OF_THE_OLD_CHAIN.has(String(r.type)) && bytes + line.bytes.length <= CARRY_AT_MOST) {
      kept.push(r);
      bytes += line.bytes.length;
    }
  });
  return { kept: foreign === null ? kept : kept.filter((r) => r.sessionId === undefined || r.sessionId === sessionId), foreign };
}

/** What a restore (or its dry run) did, for people: the lines the CLI prints and the viewer shows. */
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

/**
 * The command that resumes a restored session. A cwd holding a NUL names no directory (a shell would cut
 * it there and go elsewhere), so then the command is only `claude --resume`, run wherever the user worked.
 */
export function resumeCommand(outcome: { cwd: string; sessionId: string }): string {
  const resume = `claude --resume ${outcome.sessionId}`;
  return outcome.cwd.includes("\0") ? resume : `cd ${shellQuote(outcome.cwd)} && ${resume}`;
}

/**
 * Quotes a path for a shell when it needs it. A cwd comes from a request, so it may hold control
 * characters: those are written as `$'\xHH'` (bash and zsh), never raw, so printing the command cannot
 * drive the terminal and pasting it names the same directory.
 */
function shellQuote(path: string): string {
  if (/^[A-Za-z0-9_./-]+$/.test(path)) return path;
  // deno-lint-ignore no-control-regex -- control characters are what is escaped here
  if (!/[\x00-\x1f\x7f-\x9f]/.test(path)) return `'${path.replace(/'/g, `'\\''`)}'`;
  // Each byte of the character's UTF-8 form: bash's `\xHH` is one byte (U+0085 on disk is C2 85).
  const hex = (c: string) => [...new TextEncoder().encode(c)].map((b) => `\\x${b.toString(16).padStart(2, "0")}`).join("");
  // deno-lint-ignore no-control-regex -- as above
  return `$'${path.replace(/[\\']/g, (c) => `\\${c}`).replace(/[\x00-\x1f\x7f-\x9f]/g, hex)}'`;
}
