// `sessiontap usage [--since DATE] [--json]`: every recorded answer's tokens (conversations, subagents, side requests) per local day,
// project and model, with costs estimated from the price table.
import type { Config } from "../config/parse.ts";
import { sessionUsage } from "../transcript/summary.ts";
import { scrubLine, terminalSafeJson } from "../transcript/records.ts";
import { localDate, offsetLabel, sinceStart } from "../utils/local-time.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { tokensShort, usageLine, usageReport, type UsageRow, usd } from "../usage/tokens.ts";
import { type CommandIo, noMirror, priceTable, table } from "./command-io.ts";
import { plural } from "../utils/plural.ts";

/** A cost cell: the estimate, or the part that could be priced followed by "+?" when a model is unknown. */
function cost(row: UsageRow): string {
  if (row.costUSD !== null) return usd(row.costUSD);
  return row.knownCostUSD > 0 ? `${usd(row.knownCostUSD)}+?` : "?";
}

/** The token cells of a row. */
const tokenCells = (r: UsageRow) => [
  String(r.answers),
  tokensShort(r.usage.inputTokens),
  tokensShort(r.usage.outputTokens),
  tokensShort(r.usage.cacheCreationTokens),
  tokensShort(r.usage.cacheReadTokens),
  cost(r),
];
const TOKEN_HEAD = ["ANSWERS", "INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ", "COST"];

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const missing = await noMirror(config, io);
  if (missing !== null) return missing;
  const prices = await priceTable(config, io);
  if (typeof prices === "number") return prices;
  const now = io.clock();
  const since = sinceStart(config.since, now, io.zone);
  const sessions = await withSessionSource(config, io.fs, async (source) => (await source.loadAll()).map((data) => sessionUsage(data, prices)));
  const report = usageReport(sessions, prices, io.zone, since);
  const zone = offsetLabel(now, io.zone);
  if (config.json) {
    const shown = {
      since: since === null ? null : localDate(since, io.zone),
      timeZone: zone,
      prices: { source: prices.source, checked: prices.checked },
      ...report,
    };
    io.stdout(terminalSafeJson(JSON.stringify(shown, null, 2)) + "\n");
    return 0;
  }
  const scope = since === null ? "every recorded answer" : `answers since ${localDate(since, io.zone)}`;
  if (report.total.answers === 0) {
    io.stdout(`No recorded answers with token usage in ${sourceName(config)}${since === null ? "" : ` since ${localDate(since, io.zone)}`}.\n`);
    return 0;
  }
  const out = [`Usage: ${scope} (days in ${zone})`, ""];
  out.push(
    ...table(
      ["DAY", "SESSIONS", ...TOKEN_HEAD, "PROJECTS"],
      report.days.map((d) => [d.date, String(d.sessions), ...tokenCells(d), d.projects.map(scrubLine).join(", ")]),
      [0, 8],
    ),
  );
  out.push("");
  out.push(...table(["PROJECT", "SESSIONS", ...TOKEN_HEAD], report.projects.map((p) => [scrubLine(p.cwd), String(p.sessions), ...tokenCells(p)])));
  out.push("");
  out.push(...table(["MODEL", "SESSIONS", ...TOKEN_HEAD], report.models.map((m) => [scrubLine(m.model), String(m.sessions), ...tokenCells(m)])));
  const t = report.total;
  out.push(
    "",
    `Total: ${plural(t.sessions, "session")}, ${plural(t.answers, "answer")}: ${usageLine(t.usage, t.costUSD, t.unpriced.map(scrubLine))}`,
  );
  if (t.costUSD === null) out.push(`  of which priced: ${usd(t.knownCostUSD)}; "+?" marks a sum with answers from a model the price table does not have.`);
  out.push("", `Costs are estimates at list prices: ${prices.source}, checked ${prices.checked}. SESSIONTAP_PRICES=FILE.json corrects or extends it.`);
  io.stdout(out.join("\n") + "\n");
  return 0;
}
