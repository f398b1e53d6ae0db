/**
 * `sessiontap show SESSION [--json]`: a session's facts and its conversation, readable (Markdown, as
 * `export --format md` writes it), or as JSON with the records of the conversation in reading order.
 */
import type { Config } from "../config/parse.ts";
import { jsonText } from "../recover/json-text.ts";
import { renderItems } from "../recover/render-md.ts";
import { flatten, outline } from "../recover/tree.ts";
import { scanTranscripts, transcriptInfo } from "../storage/claude-projects.ts";
import { sourceName } from "../store/pg-reader.ts";
import { findSession, humanBytes, type CommandIo } from "./command-io.ts";

/** Runs `show`. */
export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const found = await findSession(config, io);
  if (typeof found === "number") return found;
  const { summary, tree } = found;
  const info = await transcriptInfo(io.fs, config.claudeDir, summary.sessionId, summary.cwd, await scanTranscripts(io.fs, config.claudeDir));
  const items = outline(tree);
  if (config.json) {
    const shown = { ...summary, claudeTranscript: info.state, claudeTranscriptPath: info.path, claudeTranscriptProblem: info.problem, conversation: flatten(items) };
    io.stdout(jsonText(shown) + "\n"); // the records as they are, at any depth
    return 0;
  }
  const id = summary.sessionId ?? summary.dir;
  const facts = [
    ["Session", id],
    config.store !== null
      ? ["Store", `${summary.dir} in ${sourceName(config).replace(/^the store /, "")} (${humanBytes(summary.bytes)})`]
      : ["Mirror", `${config.mirrorDir}/${summary.dir} (${summary.files} file${summary.files === 1 ? "" : "s"}, ${humanBytes(summary.bytes)})`],
    ["Cwd", summary.cwd ?? "unknown"],
    ["Time", `${summary.firstTimestamp ?? "?"} – ${summary.lastTimestamp ?? "?"}`],
    ["Records", `${summary.records} (${summary.userRecords} user, ${summary.assistantRecords} assistant)` +
      (summary.subagentRecords > 0 ? `; subagents ${summary.subagentRecords}` : "") + (summary.sideRecords > 0 ? `; side requests ${summary.sideRecords}` : "")],
    ["Shape", `${summary.leaves} ${summary.leaves === 1 ? "leaf" : "leaves"} (the newest ends the current branch), ${summary.compactions} compaction${summary.compactions === 1 ? "" : "s"}`],
    ["Claude", `${info.state}${info.path === null ? "" : ` (${info.path})`}${info.problem === null ? "" : `: ${info.problem}`}`],
  ];
  if (summary.malformedLines > 0) facts.push(["Warning", `${summary.malformedLines} line${summary.malformedLines === 1 ? "" : "s"} that are not records were skipped`]);
  if (info.state !== "intact" && summary.sessionId !== null && info.problem === null) facts.push(["Restore", `sessiontap restore ${summary.sessionId}`]);
  const width = Math.max(...facts.map(([k]) => k.length));
  io.stdout(facts.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n") + "\n\n" + renderItems(items));
  return 0;
}
