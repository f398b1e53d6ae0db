// `sessiontap show SESSION [--full] [--json]`: a session's facts and its conversation for a terminal (transcript/render.ts), or as
// JSON with the records in reading order.
import type { Config } from "../config/parse.ts";
import { jsonText, scrubLine, terminalSafeJson } from "../transcript/records.ts";
import { localDateTime, offsetLabel } from "../utils/local-time.ts";
import { ANSI_STYLE, PLAIN, renderText } from "../transcript/render.ts";
import { flatten, outline } from "../transcript/tree.ts";
import { SessionCatalog } from "../storage/mirror-reader.ts";
import { countsText } from "../transcript/summary.ts";
import { stateWords } from "../transcript/transcript-state.ts";
import { sourceName } from "../store/pg-reader.ts";
import { bytesShort, sessionAnswers, totalsOf, usageLine } from "../usage/tokens.ts";
import { type CommandIo, findSession, priceTable, useColor } from "./command-io.ts";
import { plural } from "../utils/plural.ts";

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const prices = await priceTable(config, io);
  if (typeof prices === "number") return prices;
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
