/**
 * `sessiontap usage`: the answers of many sessions summed per day (the reader's days), per project (the
 * session's working directory) and per model, with a total. Pure: the caller hands in each session's
 * answers, the price table and the time zone.
 */
import { localDate, type Zone } from "../utils/local-time.ts";
import type { PriceTable } from "./prices.ts";
import type { Answer } from "./tokens.ts";
import { type Totals, totalsOf } from "./totals.ts";

/** One session's answers, and where it ran. */
export interface SessionAnswers {
  sessionId: string | null;
  dir: string;
  cwd: string | null;
  title: string | null;
  answers: Answer[];
}

/** One row: its totals and how many sessions contributed. */
export interface UsageRow extends Totals {
  sessions: number;
}

/** The whole report. */
export interface UsageReport {
  /** Per day, oldest first, with the projects worked in that day. */
  days: (UsageRow & { date: string; projects: string[] })[];
  /** Per project (a session's working directory; "unknown" when not recorded), most expensive first. */
  projects: (UsageRow & { cwd: string })[];
  /** Per model as the API named it, most expensive first. */
  models: (UsageRow & { model: string })[];
  total: UsageRow;
}

/** Answers grouped by a key, with the sessions they came from. */
class Groups {
  private readonly map = new Map<string, { answers: Answer[]; sessions: Set<string>; extra: Set<string> }>();

  add(key: string, answer: Answer, session: string, extra?: string): void {
    let g = this.map.get(key);
    if (g === undefined) this.map.set(key, g = { answers: [], sessions: new Set(), extra: new Set() });
    g.answers.push(answer);
    g.sessions.add(session);
    if (extra !== undefined) g.extra.add(extra);
  }

  rows(table: PriceTable): { key: string; row: UsageRow; extra: string[] }[] {
    return [...this.map.entries()].map(([key, g]) => ({ key, row: { ...totalsOf(g.answers, table), sessions: g.sessions.size }, extra: [...g.extra].sort() }));
  }
}

/** Orders rows by cost (unknown cost after known, then by tokens), most first. */
function byCost(a: UsageRow, b: UsageRow): number {
  return b.knownCostUSD - a.knownCostUSD || (b.usage.inputTokens + b.usage.outputTokens) - (a.usage.inputTokens + a.usage.outputTokens);
}

/** Sums the answers made at or after `since` (ms; null: all), by day in `zone`, by project and by model. */
export function usageReport(sessions: SessionAnswers[], table: PriceTable, zone: Zone, since: number | null = null): UsageReport {
  const days = new Groups();
  const projects = new Groups();
  const models = new Groups();
  const all = new Groups();
  for (const s of sessions) {
    const key = s.sessionId ?? s.dir;
    const cwd = s.cwd ?? "unknown";
    for (const a of s.answers) {
      if (since !== null && !(a.time >= since)) continue; // an answer without a time cannot be placed after DATE
      days.add(Number.isFinite(a.time) ? localDate(a.time, zone) : "unknown", a, key, cwd);
      projects.add(cwd, a, key);
      models.add(a.model ?? "unknown", a, key);
      all.add("", a, key);
    }
  }
  return {
    days: days.rows(table).map(({ key, row, extra }) => ({ date: key, ...row, projects: extra })).sort((a, b) => a.date.localeCompare(b.date)),
    projects: projects.rows(table).map(({ key, row }) => ({ cwd: key, ...row })).sort(byCost),
    models: models.rows(table).map(({ key, row }) => ({ model: key, ...row })).sort(byCost),
    total: all.rows(table)[0]?.row ?? { ...totalsOf([], table), sessions: 0 },
  };
}
