// One session's commands (docs/DESIGN.md "Command line"): `show` (text, or JSON with the records in reading order), `export` (md,
// html or jsonl; a FILE replaced atomically, 0600) and `restore`.
import { resolve } from "node:path/posix";
import type { Config } from "../config/parse.ts";
import { describeRestore, restoreSession } from "../restore/restore-session.ts";
import { rootRedactor } from "../storage/binding-files.ts";
import { SessionCatalog } from "../storage/mirror-reader.ts";
import { replaceFile } from "../storage/publish.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { jsonText, scrubLine } from "../transcript/records.ts";
import { ANSI_STYLE, exportSession, PLAIN, renderText } from "../transcript/render.ts";
import { countsText, type SessionData, sessionIdOf, withTree } from "../transcript/summary.ts";
import { stateWords } from "../transcript/transcript-state.ts";
import { buildTree, flatten, outline } from "../transcript/tree.ts";
import type { PriceTable } from "../usage/prices.ts";
import { bytesShort, sessionAnswers, totalsOf, usageLine } from "../usage/tokens.ts";
import { localDateTime, offsetLabel } from "../utils/local-time.ts";
import { plural } from "../utils/describe-error.ts";
import { type CommandIo, exitWith, notFound, print, printJson, restorable, useColor } from "./command-io.ts";

/** The session the first argument names (an id, a directory name, a unique prefix), or exit status 1 once stderr says why. */
async function findSession(config: Readonly<Config>, io: CommandIo): Promise<SessionData | number> {
  const found = await withSessionSource(config, io.fs, (source) => source.lookup(config.positional[0]));
  return found.kind === "found" ? found.data : notFound(config, io, config.positional[0], found);
}

export async function runShow(config: Readonly<Config>, io: CommandIo, prices: PriceTable): Promise<number> {
  const data = await findSession(config, io);
  if (typeof data === "number") return data;
  const { entry: summary, info } = await new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir, undefined, prices, io.clock).judge(data);
  const items = outline(buildTree(data.records));
  const shown = { ...summary, conversation: flatten(items) };
  if (config.json) return printJson(io, shown, jsonText(shown)); // the records as they are, at any depth
  const style = useColor(io) ? ANSI_STYLE : PLAIN;
  const id = scrubLine(summary.sessionId ?? summary.dir); // from a request: it may carry anything
  const when = (iso: string | null) => (iso === null ? "?" : localDateTime(Date.parse(iso), io.zone));
  const totals = totalsOf(sessionAnswers(data), prices);
  const used = `${plural(totals.answers, "answer")}: ${usageLine(totals.usage, totals.costUSD, totals.unpriced.map(scrubLine))}`;
  const others = (n: number, what: string) => (n > 0 ? `; ${what}: ${plural(n, "answer")}` : "");
  const facts = [
    ["Session", id],
    ["Title", summary.title ?? "(none)"],
    ["Project", scrubLine(summary.cwd ?? "unknown") + (summary.gitBranch === null ? "" : ` (branch ${scrubLine(summary.gitBranch)})`)],
    ["Time", `${when(summary.firstTimestamp)} – ${when(summary.lastTimestamp)} (${offsetLabel(io.clock(), io.zone)})`],
    ["Usage", totals.answers === 0 ? "no recorded usage" : used],
    config.store !== null
      ? ["Store", `${summary.dir} in ${sourceName(config).replace(/^the store /, "")} (${bytesShort(summary.bytes)})`]
      : ["Mirror", `${config.mirrorDir}/${summary.dir} (${plural(summary.files, "file")}, ${bytesShort(summary.bytes)})`],
    ["Conversation", countsText(summary.counts) + others(summary.subagentAnswers, "subagents") + others(summary.sideAnswers, "side requests")],
    ["Shape", `${plural(summary.leaves, "leaf", "leaves")} (the newest ends the current branch), ${plural(summary.compactions, "compaction")}`],
    ["Claude", `${stateWords(info.verdict)}${info.path === null ? "" : ` (${info.path})`}${info.problem === null ? "" : `: ${info.problem}`}`],
  ];
  if (info.warning !== null) facts.push(["Warning", `Claude Code's transcript: ${scrubLine(info.warning)}`]);
  if (summary.malformedLines > 0) facts.push(["Warning", `${plural(summary.malformedLines, "line")} that are not records were skipped`]);
  if (restorable(summary)) facts.push(["Restore", `sessiontap restore ${id}`]);
  const width = Math.max(...facts.map(([k]) => k.length));
  const head = facts.map(([k, v]) => `${style.bold(k.padEnd(width))}  ${v}`).join("\n");
  const hint = config.full
    ? ""
    : `\n${style.dim("(injected context, thinking and long tool results are summarised; --full shows them, --json gives the records)")}\n`;
  return print(io, `${head}\n${hint}\n${renderText(items, { full: config.full, style, zone: io.zone, prices })}`);
}

export async function runExport(config: Readonly<Config>, io: CommandIo, prices: PriceTable): Promise<number> {
  const data = await findSession(config, io);
  if (typeof data === "number") return data;
  const redactor = config.noRedact || config.redact === "off" ? null : await rootRedactor(io.fs, config.mirrorDir);
  const text = await exportSession(data, config.format, prices, redactor);
  if (config.out === null || config.out === "-") return print(io, text);
  const path = resolve(io.cwd, config.out);
  const info = await io.fs.lstat(path);
  if (info !== null && !info.isFile) return exitWith(io, 1, `--out ${path} exists and is not a regular file; nothing written`);
  try {
    await replaceFile(io.fs, path, text);
  } catch (error) {
    return exitWith(io, 1, `cannot write ${path}: ${(error as Error).message.split("\n")[0]}`);
  }
  return exitWith(io, 0, `wrote ${sessionIdOf(data.dir, data.records) ?? data.dir} as ${config.format} to ${path}`);
}

export async function runRestore(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const data = await findSession(config, io);
  if (typeof data === "number") return data;
  const cwd = config.cwd === null ? null : resolve(io.cwd, config.cwd);
  // A typo in --cwd would put the transcript where no `claude` ever runs: say so, then do as asked.
  const there = cwd === null ? null : await io.fs.lstat(cwd);
  if (cwd !== null && (there === null || !there.isDirectory)) {
    io.stderr(
      `sessiontap: note: ${cwd} (--cwd) ${there === null ? "does not exist" : "is not a directory"}; the transcript ${
        config.dryRun ? "would be" : "is"
      } written for it all the same, and Claude Code finds it when claude --resume runs in that directory\n`,
    );
  }
  const result = await restoreSession(io.fs, withTree(data), { claudeDir: config.claudeDir, cwd, dryRun: config.dryRun, force: config.force, now: io.clock() });
  if (config.json && result.outcome !== null) printJson(io, result.outcome);
  if (!result.ok) return exitWith(io, 1, `${result.why}${result.hint === undefined ? "" : `\n  ${result.hint}`}`);
  if (!config.json) io.stdout(describeRestore(result.outcome).join("\n") + (config.dryRun ? "\nNothing written (--dry-run).\n" : "\n"));
  for (const problem of result.problems) io.stderr(`sessiontap: ${problem}\n`);
  return result.problems.length > 0 ? 1 : 0;
}
