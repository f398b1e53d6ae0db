// The commands across sessions (docs/DESIGN.md "Command line"): `list`, `usage` (per local day, project and model) and `search`.
import type { Config } from "../config/parse.ts";
import { SessionCatalog } from "../storage/mirror-reader.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { scrubLine } from "../transcript/records.ts";
import { regexMatcher, search, type SearchHit, substringMatcher } from "../transcript/search.ts";
import { type SessionData, sessionUsage } from "../transcript/summary.ts";
import { priceOf, type PriceTable } from "../usage/prices.ts";
import { tokensShort, totalTokens, usageLine, usageReport, type UsageRow, usd } from "../usage/tokens.ts";
import { localDate, localDateTime, offsetLabel, sinceStart } from "../utils/local-time.ts";
import { plural } from "../utils/describe-error.ts";
import { type CommandIo, exitWith, notFound, print, printJson, restorable, table, useColor } from "./command-io.ts";

/** What the project column says of a session whose working directory no request named. */
const NO_CWD = "? (cwd unknown)";

export async function runList(config: Readonly<Config>, io: CommandIo, prices: PriceTable): Promise<number> {
  const all = await withSessionSource(config, io.fs, (source) => new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir, source, prices).list());
  const since = sinceStart(config.since, io.clock(), io.zone);
  const entries = since === null ? all : all.filter((e) => e.lastTimestamp !== null && Date.parse(e.lastTimestamp) >= since);
  if (config.json) return printJson(io, entries);
  const none = all.length === 0 ? `No mirrored sessions in ${sourceName(config)}.` : `No session was active since ${config.since} (${all.length} older).`;
  if (entries.length === 0) return print(io, none + "\n");
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
  const note = (...lines: string[]) => out.push("", ...lines);
  const unknown = entries.filter((e) => e.costUSD === null && totalTokens(e.usage) > 0);
  if (unknown.length > 0) {
    const models = [...new Set(unknown.flatMap((e) => e.models))].filter((m) => priceOf(prices, m) === null).map(scrubLine);
    note(`COST ? : a model not in the price table (${models.join(", ") || "unknown"}); SESSIONTAP_PRICES=FILE.json adds it (see sessiontap usage --help).`);
  }
  const lost = entries.filter(restorable);
  if (lost.length > 0) {
    const whose = "whose Claude Code transcript is missing, a stub or behind the mirror (removed by its cleanup, cut, or lost)";
    note(
      `${plural(lost.length, "session")} ${whose}; the mirror holds ${lost.length === 1 ? "it; to put it back" : "them; to put one back"}:`,
      ...lost.map((e) => `  sessiontap restore ${scrubLine(e.sessionId ?? e.dir)}${e.cwd === null ? " --cwd DIR" : ""}`),
    );
  }
  if (entries.some((e) => e.cwd === null && e.sessionId !== null)) {
    note(`PROJECT ${NO_CWD}: no request named the working directory; restore asks for it once: sessiontap restore ID --cwd DIR (where you run claude).`);
  }
  const unreadable = entries.filter((e) => e.claudeTranscriptWarning !== null);
  if (unreadable.length > 0) {
    const what = scrubLine(unreadable[0].claudeTranscriptWarning!);
    note(`${plural(unreadable.length, "session")} (CLAUDE unreadable) where something not read stands in Claude Code's tree: ${what}`);
  }
  const odd = entries.filter((e) => e.claudeTranscriptProblem !== null).length;
  if (odd > 0) note(`${plural(odd, "session")} (CLAUDE no-id) with an id Claude Code could not have made: readable here, not restorable.`);
  return print(io, out.join("\n") + "\n");
}

/** A cost cell: the estimate, or the part that could be priced followed by "+?" when a model is unknown. */
const cost = (row: UsageRow) => row.costUSD !== null ? usd(row.costUSD) : row.knownCostUSD > 0 ? `${usd(row.knownCostUSD)}+?` : "?";

const cells = (r: UsageRow) => [
  String(r.sessions),
  String(r.answers),
  tokensShort(r.usage.inputTokens),
  tokensShort(r.usage.outputTokens),
  tokensShort(r.usage.cacheCreationTokens),
  tokensShort(r.usage.cacheReadTokens),
  cost(r),
];
const HEAD = ["SESSIONS", "ANSWERS", "INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ", "COST"];

export async function runUsage(config: Readonly<Config>, io: CommandIo, prices: PriceTable): Promise<number> {
  const now = io.clock();
  const since = sinceStart(config.since, now, io.zone);
  const day = since === null ? null : localDate(since, io.zone);
  const sessions = await withSessionSource(config, io.fs, async (source) => (await source.loadAll()).map((data) => sessionUsage(data, prices)));
  const report = usageReport(sessions, prices, io.zone, since);
  const zone = offsetLabel(now, io.zone);
  if (config.json) {
    return printJson(io, { since: day, timeZone: zone, prices: { source: prices.source, checked: prices.checked }, ...report });
  }
  if (report.total.answers === 0) return print(io, `No recorded answers with token usage in ${sourceName(config)}${day === null ? "" : ` since ${day}`}.\n`);
  const t = report.total;
  const out = [
    `Usage: ${day === null ? "every recorded answer" : `answers since ${day}`} (days in ${zone})`,
    "",
    ...table(["DAY", ...HEAD, "PROJECTS"], report.days.map((d) => [d.date, ...cells(d), d.projects.map(scrubLine).join(", ")]), [0, 8]),
    "",
    ...table(["PROJECT", ...HEAD], report.projects.map((p) => [scrubLine(p.cwd), ...cells(p)])),
    "",
    ...table(["MODEL", ...HEAD], report.models.map((m) => [scrubLine(m.model), ...cells(m)])),
    "",
    `Total: ${plural(t.sessions, "session")}, ${plural(t.answers, "answer")}: ${usageLine(t.usage, t.costUSD, t.unpriced.map(scrubLine))}`,
  ];
  if (t.costUSD === null) out.push(`  of which priced: ${usd(t.knownCostUSD)}; "+?" marks a sum with answers from a model the price table does not have.`);
  out.push("", `Costs are estimates at list prices: ${prices.source}, checked ${prices.checked}. SESSIONTAP_PRICES=FILE.json corrects or extends it.`);
  return print(io, out.join("\n") + "\n");
}

function marked(hit: SearchHit, open: string, close: string): string {
  let out = "";
  let at = 0;
  for (const [a, b] of hit.marks) {
    out += hit.snippet.slice(at, a) + open + hit.snippet.slice(a, b) + close;
    at = b;
  }
  return out + hit.snippet.slice(at);
}

export async function runSearch(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const query = config.positional[0];
  const match = config.regex ? regexMatcher(query) : substringMatcher(query);
  const found = await withSessionSource(config, io.fs, async (source): Promise<SessionData[] | number> => {
    if (config.session === null) return await source.loadAll();
    const one = await source.lookup(config.session);
    return one.kind === "found" ? [one.data] : notFound(config, io, config.session, one);
  });
  if (typeof found === "number") return found;
  const hits = search(found, match);
  const where = config.session === null ? `the ${plural(found.length, "session")} in ${sourceName(config)}` : `session ${config.session}`;
  if (config.json) printJson(io, hits);
  if (hits.length === 0) return exitWith(io, 1, `nothing matches ${config.regex ? "the regular expression " : ""}"${query}" in ${where}`);
  if (config.json) return 0;
  const color = useColor(io);
  const paint = (code: string, text: string) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const out: string[] = [];
  for (const hit of hits) {
    const time = hit.timestamp === null ? "-" : localDateTime(Date.parse(hit.timestamp), io.zone);
    const off = hit.offBranch ? `  ${paint("33", "(off the current branch: rewound or retried)")}` : "";
    out.push(`${paint("36", scrubLine(hit.sessionId ?? hit.dir))}  ${time}  ${paint("1", hit.role)}  ${hit.title ?? "(untitled)"}${off}`);
    out.push(`  ${color ? marked(hit, "\x1b[1;31m", "\x1b[0m") : marked(hit, "»", "«")}`);
  }
  const sessions = new Set(hits.map((h) => h.dir)).size;
  const verb = hits.length === 1 ? "matches" : "match";
  out.push("", `${plural(hits.length, "message")} in ${plural(sessions, "session")} ${verb}. Open one: sessiontap show ID (or the viewer, /_tap/).`);
  return print(io, out.join("\n") + "\n");
}
