// Tokens and cost of the recorded answers: per answer, summed, per day, project and model, and as people read them (docs/commands.md).
import { isObject } from "../protocol/json.ts";
import { localDate, type Zone } from "../utils/local-time.ts";
import { costOf, type PriceTable } from "./prices.ts";

type Rec = Record<string, unknown>;

const TOKEN_KEYS = ["inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens"] as const;
export type TokenCounts = Record<(typeof TOKEN_KEYS)[number], number>;

/** One answer the API billed; its `cacheWrite1hTokens`, part of `cacheCreationTokens`, are priced above the five-minute default. */
export type Answer = NonNullable<ReturnType<typeof answerOf>>;

export const totalTokens = (t: TokenCounts): number => TOKEN_KEYS.reduce((n, key) => n + t[key], 0);

const count = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0);
const string = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);

/** Null for a record without usage, or one rebuilt from history (`reconstructed`). */
function answerOf(r: Rec, scope: "main" | "subagent" | "side") {
  if (r.type !== "assistant" || r.reconstructed === true) return null;
  const message = isObject(r.message) ? r.message : null;
  const usage = message?.usage;
  if (!isObject(usage)) return null;
  const tokens: TokenCounts = {
    inputTokens: count(usage.input_tokens),
    outputTokens: count(usage.output_tokens),
    cacheCreationTokens: count(usage.cache_creation_input_tokens),
    cacheReadTokens: count(usage.cache_read_input_tokens),
  };
  if (totalTokens(tokens) === 0) return null;
  const oneHour = count(isObject(usage.cache_creation) ? usage.cache_creation.ephemeral_1h_input_tokens : 0);
  const time = typeof r.timestamp === "string" ? Date.parse(r.timestamp) : Number.NaN;
  return { id: string(message?.id), model: string(message?.model), time, scope, tokens, cacheWrite1hTokens: Math.min(tokens.cacheCreationTokens, oneHour) };
}

/** Each message id once: Claude Code repeats an answer on each block's record, its counts growing, so they merge by the largest. */
export function answersOf(records: Rec[], scope: Answer["scope"], seen = new Map<string, Answer>()): Answer[] {
  const out: Answer[] = [];
  for (const r of records) {
    const answer = answerOf(r, scope);
    if (answer === null) continue;
    const earlier = answer.id === null ? undefined : seen.get(answer.id);
    if (earlier === undefined) {
      if (answer.id !== null) seen.set(answer.id, answer);
      out.push(answer);
      continue;
    }
    for (const key of TOKEN_KEYS) earlier.tokens[key] = Math.max(earlier.tokens[key], answer.tokens[key]);
    earlier.cacheWrite1hTokens = Math.max(earlier.cacheWrite1hTokens, answer.cacheWrite1hTokens);
  }
  return out;
}

export function sessionAnswers(session: { records: Rec[]; agents: { records: Rec[] }[]; side: Rec[] }): Answer[] {
  const seen = new Map<string, Answer>();
  const scopes = [[session.records, "main"], [session.agents.flatMap((a) => a.records), "subagent"], [session.side, "side"]] as const;
  return scopes.flatMap(([records, scope]) => answersOf(records, scope, seen));
}

export type Totals = ReturnType<typeof totalsOf>;

/** Rounded to a millionth of a cent, so sums print and compare stably. */
const cents = (usd: number) => Math.round(usd * 1e8) / 1e8;

/** The cost is null once one model is not in the price table: a partial sum would understate it. */
export function totalsOf(answers: Iterable<Answer>, table: PriceTable) {
  const usage: TokenCounts = { inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 };
  const models = new Set<string>();
  const unpriced = new Set<string>();
  let known = 0;
  let n = 0;
  for (const a of answers) {
    n++;
    for (const key of TOKEN_KEYS) usage[key] += a.tokens[key];
    if (a.model !== null) models.add(a.model);
    const cost = costOf(table, a);
    if (cost === null) unpriced.add(a.model ?? "unknown");
    else known += cost;
  }
  const usd = cents(known);
  return { answers: n, usage, costUSD: unpriced.size > 0 ? null : usd, knownCostUSD: usd, models: [...models].sort(), unpriced: [...unpriced].sort() };
}

export type SessionAnswers = { sessionId: string | null; dir: string; cwd: string | null; answers: Answer[] };

export type UsageRow = Totals & { sessions: number };

export type UsageReport = ReturnType<typeof usageReport>;

type Placed = { answer: Answer; session: string; cwd: string };

const rowOf = (list: Placed[], table: PriceTable) => ({ ...totalsOf(list.map((p) => p.answer), table), sessions: new Set(list.map((p) => p.session)).size });

function group(placed: Placed[], keyOf: (p: Placed) => string, table: PriceTable): { key: string; row: UsageRow; placed: Placed[] }[] {
  const groups = new Map<string, Placed[]>();
  for (const p of placed) (groups.get(keyOf(p)) ?? groups.set(keyOf(p), []).get(keyOf(p))!).push(p);
  return [...groups].map(([key, list]) => ({ key, row: rowOf(list, table), placed: list }));
}

const byCost = (a: UsageRow, b: UsageRow) =>
  b.knownCostUSD - a.knownCostUSD || (b.usage.inputTokens + b.usage.outputTokens) - (a.usage.inputTokens + a.usage.outputTokens);

/** Days oldest first, each split by project and by model (the viewer's chart); the rest most expensive first. An answer without a time is not after `since`. */
export function usageReport(sessions: SessionAnswers[], table: PriceTable, zone: Zone, since: number | null = null) {
  const placed = sessions.flatMap((s) =>
    s.answers.filter((a) => since === null || a.time >= since).map((answer) => ({ answer, session: s.sessionId ?? s.dir, cwd: s.cwd ?? "unknown" }))
  );
  const project = (p: Placed) => p.cwd;
  const model = (p: Placed) => p.answer.model ?? "unknown";
  const parts = (list: Placed[], keyOf: (p: Placed) => string) =>
    group(list, keyOf, table).map(({ key, row }) => ({ key, tokens: totalTokens(row.usage), knownCostUSD: row.knownCostUSD }));
  const days = group(placed, (p) => (Number.isFinite(p.answer.time) ? localDate(p.answer.time, zone) : "unknown"), table);
  return {
    days: days.map(({ key, row, placed }) => ({
      date: key,
      ...row,
      projects: [...new Set(placed.map(project))].sort(),
      parts: { project: parts(placed, project), model: parts(placed, model) },
    })).sort((a, b) => a.date.localeCompare(b.date)),
    projects: group(placed, project, table).map(({ key, row }) => ({ cwd: key, ...row })).sort(byCost),
    models: group(placed, model, table).map(({ key, row }) => ({ model: key, ...row })).sort(byCost),
    total: rowOf(placed, table),
  };
}

/** 950, 12.3k, 4.56M. */
export function tokensShort(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : n < 100_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(n < 10_000_000 ? 2 : n < 100_000_000 ? 1 : 0)}M`;
}

/** 512 B, 15.2 KB, 3.4 MB (units of 1024). */
export function bytesShort(n: number): string {
  const units = ["KB", "MB", "GB", "TB"];
  let v = n;
  let i = -1;
  while (v >= 1024 && i < units.length - 1) (v /= 1024), i++;
  return i < 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** "$12.34", "$0.0042" (two significant digits when small), "?" for unknown. */
export function usd(n: number | null): string {
  if (n === null) return "?";
  if (n === 0) return "$0.00";
  return n >= 0.01 ? `$${n.toFixed(2)}` : `$${n.toPrecision(2)}`;
}

export function answerLine(r: Rec, table: PriceTable): string | null {
  const a = answerOf(r, "main");
  return a === null ? null : usageLine(a.tokens, costOf(table, a));
}

/** "12.3k in · 456 out · 1.20k cache write · 98.0k cache read · ≈ $0.42". */
export function usageLine(usage: TokenCounts, costUSD: number | null, unpriced: string[] = []): string {
  const parts = [`${tokensShort(usage.inputTokens)} in`, `${tokensShort(usage.outputTokens)} out`];
  if (usage.cacheCreationTokens > 0) parts.push(`${tokensShort(usage.cacheCreationTokens)} cache write`);
  if (usage.cacheReadTokens > 0) parts.push(`${tokensShort(usage.cacheReadTokens)} cache read`);
  parts.push(costUSD === null ? `cost unknown${unpriced.length > 0 ? ` (${unpriced.join(", ")} not in the price table)` : ""}` : `≈ ${usd(costUSD)}`);
  return parts.join(" · ");
}
