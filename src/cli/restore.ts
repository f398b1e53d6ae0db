/**
 * `sessiontap restore SESSION [--claude-dir DIR] [--cwd DIR] [--dry-run] [--force]`: writes the session's
 * current branch where `claude --resume SESSION` finds it, `<claude-dir>/projects/<encoded cwd>/<id>.jsonl`
 * (see recover/restore-plan.ts for what is written, recover/project-dir.ts for the directory name).
 *
 * What is already there decides: nothing → the file is created; a stub (no user or assistant record) or an
 * empty file → backed up as `<name>.bak-<UTC timestamp>` and replaced; a transcript with content → left
 * alone (exit 1) unless `--force`, which backs it up first (a torn last line is named: --force fixes it).
 * Publication is atomic and never clobbers a file that appeared or changed meanwhile (storage/publish.ts);
 * the file is 0600, new directories 0700, and new, so its modification time is now: Claude Code's cleanup
 * (by modification time) does not take it again the next day.
 *
 * With the main conversation go the session's subagents (cli/restore-subagents.ts) and, when the mirror
 * saw Claude Code name the session, its `ai-title` record (recover/session-title.ts).
 */
import type { Config } from "../config/parse.ts";
import { compactJson } from "../recover/json-text.ts";
import { parseJsonl, isConversation } from "../recover/records.ts";
import { planRestore } from "../recover/restore-plan.ts";
import { transcriptName } from "../protocol/id-name.ts";
import { sessionTitle, titleRecord } from "../recover/session-title.ts";
import { withSessionSource } from "../store/pg-reader.ts";
import { planSubagents, writeSubagents, type SubagentOutcome } from "./restore-subagents.ts";
import { classifyTranscript, tornLastLine, type TranscriptState } from "../recover/transcript.ts";
import { transcriptPathFor } from "../storage/claude-projects.ts";
import { replaceWithBackup, publishNew, type Published } from "../storage/publish.ts";
import { absolute, findSession, type CommandIo } from "./command-io.ts";

/** What restore did or would do, as `--json` prints it. */
interface Outcome {
  sessionId: string;
  path: string;
  cwd: string;
  existing: TranscriptState;
  action: "create" | "replace" | "refuse";
  dryRun: boolean;
  backup: string | null;
  records: number;
  userRecords: number;
  assistantRecords: number;
  leafUuid: string | null;
  /** The title Claude Code gave the session, when the mirror saw it (written as its `ai-title` record). */
  title: string | null;
  subagents: SubagentOutcome[];
}

/** Runs `restore`. */
export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const found = await findSession(config, io);
  if (typeof found === "number") return found;
  const { summary, tree } = found;
  const sessionId = summary.sessionId;
  if (sessionId === null || transcriptName(sessionId) === null) {
    io.stderr(`sessiontap: session ${summary.dir} has no id Claude Code could resume by${sessionId === null ? "" : ` ("${sessionId}")`}; nothing written\n`);
    return 1;
  }
  const cwd = config.cwd !== null ? absolute(config.cwd, io.cwd) : summary.cwd;
  if (cwd === null) {
    io.stderr(`sessiontap: the mirror does not know the working directory of ${sessionId}; pass --cwd DIR (where you run claude)\n`);
    return 1;
  }
  const plan = planRestore(tree, { sessionId, cwd });
  if (plan.records.length === 0) {
    io.stderr(`sessiontap: session ${sessionId} has no user or assistant record to restore\n`);
    return 1;
  }
  const path = await transcriptPathFor(io.fs, config.claudeDir, cwd, sessionId);
  const others = await withSessionSource(config, io.fs, (source) => source.conversations(summary.dir));
  const title = sessionTitle(others.side);
  const subagents = planSubagents(others, { sessionId, cwd }, path);
  const info = await io.fs.lstat(path);
  if (info !== null && !info.isFile) {
    io.stderr(`sessiontap: ${path} is ${info.isSymbolicLink ? "a symbolic link" : "not a regular file"}; left alone, nothing written\n`);
    return 1;
  }
  const text = info === null ? null : await io.fs.readText(path);
  const existing = classifyTranscript(text);
  const action = existing === "missing" ? "create" : existing === "stub" || config.force ? "replace" : "refuse";
  const outcome: Outcome = {
    sessionId, path, cwd, existing, action, dryRun: config.dryRun, backup: null, records: plan.records.length,
    userRecords: plan.records.filter((r) => r.type === "user").length,
    assistantRecords: plan.records.filter((r) => r.type === "assistant").length, leafUuid: plan.leafUuid,
    title, subagents: [],
  };
  const report = () => {
    if (config.json) io.stdout(JSON.stringify(outcome, null, 2) + "\n");
  };

  if (action === "refuse") {
    const held = text === null ? 0 : parseJsonl(text).records.filter(isConversation).length;
    const torn = text !== null && tornLastLine(text);
    report();
    io.stderr(
      `sessiontap: ${path} already holds a transcript (${held} user/assistant records${torn ? "; its last line is torn, a half-written record" : ""}); left alone.\n` +
        `  Compare with: sessiontap show ${sessionId}\n  Replace it anyway (a backup is kept beside it): sessiontap restore ${sessionId} --force\n`,
    );
    return 1;
  }
  const what = `${outcome.records} records (${outcome.userRecords} user, ${outcome.assistantRecords} assistant)`;
  if (config.dryRun) {
    outcome.subagents = await writeSubagents(io, subagents.planned, { force: config.force, dryRun: true });
    report();
    if (!config.json) {
      const plan = action === "create"
        ? `Would create ${path}\n  with ${what} of session ${sessionId}.`
        : `Would back up the ${existing === "stub" ? "stub" : "transcript"} at ${path}\n  as ${path}.bak-<UTC time> and replace it with ${what} of session ${sessionId}.`;
      const agents = outcome.subagents.map((a) => `\n  and subagent ${a.agentId}: ${a.action === "keep" ? "kept as it is (it holds a conversation)" : `${a.action} ${a.path}`}`).join("");
      io.stdout(`${plan}${agents}\nNothing written (--dry-run).\n`);
    }
    return 0;
  }

  const data = [...(title === null ? [] : [titleRecord(sessionId, title)]), ...plan.records].map((r) => compactJson(r) + "\n").join("");
  let published: Published;
  try {
    if (info === null) {
      await io.fs.mkdir(path.slice(0, path.lastIndexOf("/")), 0o700);
      published = await publishNew(io.fs, path, data);
    } else {
      published = await replaceWithBackup(io.fs, path, data, info, io.clock());
    }
  } catch (error) {
    io.stderr(`sessiontap: cannot write ${path}: ${(error as Error).message.split("\n")[0]}\n`);
    return 1;
  }
  if (published.kind === "appeared" || published.kind === "changed") {
    outcome.action = "refuse";
    report();
    io.stderr(`sessiontap: ${path} ${published.kind === "appeared" ? "appeared" : "changed"} while restoring; left alone, nothing replaced. Run restore again to look afresh.\n`);
    return 1;
  }
  if (published.kind === "replaced") outcome.backup = published.backup;
  outcome.subagents = await writeSubagents(io, subagents.planned, { force: config.force, dryRun: false });
  report();
  const failed = outcome.subagents.filter((a) => a.action === "failed");
  if (!config.json) {
    const lines = [`Restored session ${sessionId}: ${what}${title === null ? "" : `, titled "${title}"`}.`, `  written  ${path}`];
    if (outcome.backup !== null) lines.push(`  backup   ${outcome.backup} (the ${existing === "stub" ? "stub" : "transcript"} that was there)`);
    for (const a of outcome.subagents) {
      if (a.action === "create" || a.action === "replace") lines.push(`  subagent ${a.path} (${a.records} records)${a.backup === null ? "" : `, backup ${a.backup}`}`);
      else if (a.action === "keep") lines.push(`  subagent ${a.path} kept: it holds a conversation (--force replaces it, with a backup)`);
    }
    lines.push("", "Resume it with:", `  cd ${shellQuote(cwd)} && claude --resume ${sessionId}`);
    io.stdout(lines.join("\n") + "\n");
  }
  for (const a of failed) io.stderr(`sessiontap: subagent ${a.agentId} of ${sessionId} not restored: ${a.error}\n`);
  if (subagents.unnamed > 0) io.stderr(`sessiontap: ${subagents.unnamed} subagent conversation${subagents.unnamed === 1 ? "" : "s"} of ${sessionId} carry no id Claude Code could name a file by; not restored\n`);
  return failed.length > 0 || subagents.unnamed > 0 ? 1 : 0;
}

/** Quotes a path for a POSIX shell when it needs it. */
function shellQuote(path: string): string {
  return /^[A-Za-z0-9_./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}
