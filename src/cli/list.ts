// `sessiontap list [--since DATE] [--json]`: every mirrored session, most recent first, with its title, project, tokens and cost, and
// Claude Code's own transcript of it as the one judge says (docs/DESIGN.md "One judge of Claude Code's transcript").
import type { Config } from "../config/parse.ts";
import { scrubLine, terminalSafeJson } from "../transcript/records.ts";
import { localDateTime, offsetLabel, sinceStart } from "../utils/local-time.ts";
import { SessionCatalog } from "../storage/mirror-reader.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { tokensShort, totalTokens, usd } from "../usage/tokens.ts";
import { priceOf } from "../usage/prices.ts";
import { type CommandIo, noMirror, priceTable, table } from "./command-io.ts";
import { plural } from "../utils/plural.ts";

/** What the project column says of a session whose working directory no request named. */
const NO_CWD = "? (cwd unknown)";

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const missing = await noMirror(config, io);
  if (missing !== null) return missing;
  const prices = await priceTable(config, io);
  if (typeof prices === "number") return prices;
  const all = await withSessionSource(config, io.fs, (source) => new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir, source, prices).list());
  const since = sinceStart(config.since, io.clock(), io.zone);
  const entries = since === null ? all : all.filter((e) => e.lastTimestamp !== null && Date.parse(e.lastTimestamp) >= since);
  if (config.json) {
    io.stdout(terminalSafeJson(JSON.stringify(entries, null, 2)) + "\n");
    return 0;
  }
  if (entries.length === 0) {
    io.stdout(all.length === 0 ? `No mirrored sessions in ${sourceName(config)}.\n` : `No session was active since ${config.since} (${all.length} older).\n`);
    return 0;
  }
  const when = (iso: string | null) => (iso === null ? "-" : localDateTime(Date.parse(iso), io.zone));
  const rows = entries.map((e) => [
    scrubLine(e.sessionId ?? e.dir), // an id comes from a request: it may carry anything
    when(e.lastTimestamp),
    tokensShort(totalTokens(e.usage)),
    usd(e.costUSD),
    e.claudeTranscriptProblem !== null ? "no-id" : e.claudeTranscriptWarning !== null ? "unreadable" : e.claudeTranscript,
    e.cwd === null ? NO_CWD : scrubLine(e.cwd),
  ]);
  const head = ["SESSION", `LAST (${offsetLabel(io.clock(), io.zone)})`, "TOKENS", "COST", "CLAUDE", "PROJECT"];
  const [header, ...lines] = table(head, rows, [0, 1, 4, 5]);
  const out = [header];
  entries.forEach((e, i) => {
    out.push(lines[i]);
    if (e.title !== null) out.push(`  ${e.title}`);
  });
  const unknown = entries.filter((e) => e.costUSD === null && totalTokens(e.usage) > 0);
  if (unknown.length > 0) {
    const models = [...new Set(unknown.flatMap((e) => e.models))].filter((m) => priceOf(prices, m) === null);
    out.push(
      "",
      `COST ? : a model not in the price table (${
        models.map(scrubLine).join(", ") || "unknown"
      }); SESSIONTAP_PRICES=FILE.json adds it (see sessiontap usage --help).`,
    );
  }
  const lost = entries.filter((e) =>
    e.claudeTranscript !== "intact" && e.sessionId !== null && e.claudeTranscriptProblem === null && e.claudeTranscriptWarning === null
  );
  if (lost.length > 0) {
    out.push(
      "",
      `${plural(lost.length, "session")} whose Claude Code transcript is missing, a stub or behind the mirror (removed by its cleanup, cut, or lost); ` +
        `the mirror holds ${lost.length === 1 ? "it; to put it back" : "them; to put one back"}:`,
    );
    for (const e of lost) out.push(`  sessiontap restore ${scrubLine(e.sessionId ?? e.dir)}${e.cwd === null ? " --cwd DIR" : ""}`);
  }
  if (entries.some((e) => e.cwd === null && e.sessionId !== null)) {
    out.push(
      "",
      `PROJECT ${NO_CWD}: no request named the working directory; restore asks for it once: sessiontap restore ID --cwd DIR (where you run claude).`,
    );
  }
  const unreadable = entries.filter((e) => e.claudeTranscriptWarning !== null);
  if (unreadable.length > 0) {
    out.push(
      "",
      `${unreadable.length} session${unreadable.length === 1 ? "" : "s"} (CLAUDE unreadable) where something not read stands in Claude Code's tree: ${
        scrubLine(unreadable[0].claudeTranscriptWarning!)
      }`,
    );
  }
  const odd = entries.filter((e) => e.claudeTranscriptProblem !== null).length;
  if (odd > 0) out.push("", `${plural(odd, "session")} (CLAUDE no-id) with an id Claude Code could not have made: readable here, not restorable.`);
  io.stdout(out.join("\n") + "\n");
  return 0;
}
