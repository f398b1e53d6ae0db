// One session's commands (docs/DESIGN.md "Command line"): `show` its facts and conversation for a terminal, or as JSON with the
// records in reading order; `export` it as md, html or jsonl (to FILE replaced atomically, 0600); `restore` it (restore-session.ts).
import { resolve } from "node:path/posix";
import type { Config } from "../config/parse.ts";
import { describeRestore, restoreSession } from "../restore/restore-session.ts";
import { rootRedactor } from "../storage/binding-files.ts";
import { SessionCatalog } from "../storage/mirror-reader.ts";
import { replaceFile } from "../storage/publish.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { jsonText, scrubLine, terminalSafeJson } from "../transcript/records.ts";
import { ANSI_STYLE, exportSession, PLAIN, renderText } from "../transcript/render.ts";
import { countsText, type SessionData, type SessionSummary, summarize } from "../transcript/summary.ts";
import { stateWords } from "../transcript/transcript-state.ts";
import { buildTree, flatten, outline, type Tree } from "../transcript/tree.ts";
import type { PriceTable } from "../usage/prices.ts";
import { bytesShort, sessionAnswers, totalsOf, usageLine } from "../usage/tokens.ts";
import { localDateTime, offsetLabel } from "../utils/local-time.ts";
import { plural } from "../utils/plural.ts";
import { type CommandIo, notFound, useColor } from "./command-io.ts";

/** The session the first argument names (an id, a directory name, a unique prefix), or exit status 1 once stderr says why. */
async function findSession(
  config: Readonly<Config>,
  io: CommandIo,
  prices?: PriceTable,
): Promise<{ data: SessionData; tree: Tree; summary: SessionSummary } | number> {
  const found = await withSessionSource(config, io.fs, (source) => source.lookup(config.positional[0]));
  if (found.kind !== "found") return notFound(config, io, config.positional[0], found);
  const tree = buildTree(found.data.records);
  return { data: found.data, tree, summary: summarize(found.data, tree, prices) };
}

export async function runShow(config: Readonly<Config>, io: CommandIo, prices: PriceTable): Promise<number> {
  const found = await findSession(config, io, prices);
  if (typeof found === "number") return found;
  const { summary, tree } = found;
  const { entry, info } = await new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir, undefined, prices, io.clock).judge(found.data);
  const items = outline(tree);
  if (config.json) {
    const shown = { ...entry, conversation: flatten(items) };
    io.stdout(terminalSafeJson(jsonText(shown)) + "\n"); // the records as they are, at any depth
    return 0;
  }
  const style = useColor(io) ? ANSI_STYLE : PLAIN;
  const id = scrubLine(summary.sessionId ?? summary.dir); // from a request: it may carry anything
  const when = (iso: string | null) => (iso === null ? "?" : localDateTime(Date.parse(iso), io.zone));
  const totals = totalsOf(sessionAnswers(found.data), prices);
  const facts = [
    ["Session", id],
    ["Title", summary.title ?? "(none)"],
    ["Project", scrubLine(summary.cwd ?? "unknown") + (summary.gitBranch === null ? "" : ` (branch ${scrubLine(summary.gitBranch)})`)],
    ["Time", `${when(summary.firstTimestamp)} – ${when(summary.lastTimestamp)} (${offsetLabel(io.clock(), io.zone)})`],
    [
      "Usage",
      totals.answers === 0
        ? "no recorded usage"
        : `${plural(totals.answers, "answer")}: ${usageLine(totals.usage, totals.costUSD, totals.unpriced.map(scrubLine))}`,
    ],
    config.store !== null
      ? ["Store", `${summary.dir} in ${sourceName(config).replace(/^the store /, "")} (${bytesShort(summary.bytes)})`]
      : ["Mirror", `${config.mirrorDir}/${summary.dir} (${plural(summary.files, "file")}, ${bytesShort(summary.bytes)})`],
    [
      "Conversation",
      countsText(summary.counts) + (summary.subagentAnswers > 0 ? `; subagents: ${plural(summary.subagentAnswers, "answer")}` : "") +
      (summary.sideAnswers > 0 ? `; side requests: ${plural(summary.sideAnswers, "answer")}` : ""),
    ],
    [
      "Shape",
      `${plural(summary.leaves, "leaf", "leaves")} (the newest ends the current branch), ${plural(summary.compactions, "compaction")}`,
    ],
    ["Claude", `${stateWords(info.verdict)}${info.path === null ? "" : ` (${info.path})`}${info.problem === null ? "" : `: ${info.problem}`}`],
  ];
  if (info.warning !== null) facts.push(["Warning", `Claude Code's transcript: ${scrubLine(info.warning)}`]);
  if (summary.malformedLines > 0) {
    facts.push(["Warning", `${plural(summary.malformedLines, "line")} that are not records were skipped`]);
  }
  if (info.state !== "intact" && summary.sessionId !== null && info.problem === null && info.warning === null) {
    facts.push(["Restore", `sessiontap restore ${id}`]);
  }
  const width = Math.max(...facts.map(([k]) => k.length));
  const head = facts.map(([k, v]) => `${style.bold(k.padEnd(width))}  ${v}`).join("\n");
  const hint = config.full
    ? ""
    : `\n${style.dim("(injected context, thinking and long tool results are summarised; --full shows them, --json gives the records)")}\n`;
  io.stdout(`${head}\n${hint}\n${renderText(items, { full: config.full, style, zone: io.zone, prices })}`);
  return 0;
}

export async function runExport(config: Readonly<Config>, io: CommandIo, prices: PriceTable): Promise<number> {
  const found = await findSession(config, io, prices);
  if (typeof found === "number") return found;
  const redactor = config.noRedact || config.redact === "off" ? null : await rootRedactor(io.fs, config.mirrorDir);
  const text = await exportSession(found.data, config.format, prices, redactor);
  if (config.out === null || config.out === "-") {
    io.stdout(text);
    return 0;
  }
  const path = resolve(io.cwd, config.out);
  const info = await io.fs.lstat(path);
  if (info !== null && !info.isFile) {
    io.stderr(`sessiontap: --out ${path} exists and is not a regular file; nothing written\n`);
    return 1;
  }
  try {
    await replaceFile(io.fs, path, text);
  } catch (error) {
    io.stderr(`sessiontap: cannot write ${path}: ${(error as Error).message.split("\n")[0]}\n`);
    return 1;
  }
  io.stderr(`sessiontap: wrote ${found.summary.sessionId ?? found.summary.dir} as ${config.format} to ${path}\n`);
  return 0;
}

export async function runRestore(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const found = await findSession(config, io);
  if (typeof found === "number") return found;
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
  const result = await restoreSession(io.fs, { ...found, others: found.data }, {
    claudeDir: config.claudeDir,
    cwd,
    dryRun: config.dryRun,
    force: config.force,
    now: io.clock(),
  });
  if (config.json && result.outcome !== null) io.stdout(terminalSafeJson(JSON.stringify(result.outcome, null, 2)) + "\n");
  if (!result.ok) {
    io.stderr(`sessiontap: ${result.why}\n${result.hint === undefined ? "" : `  ${result.hint}\n`}`);
    return 1;
  }
  if (!config.json) io.stdout(describeRestore(result.outcome).join("\n") + (config.dryRun ? "\nNothing written (--dry-run).\n" : "\n"));
  for (const problem of result.problems) io.stderr(`sessiontap: ${problem}\n`);
  return result.problems.length > 0 ? 1 : 0;
}
