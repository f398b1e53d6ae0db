/**
 * Sums of answers (a session's, a day's, a model's) with their estimated cost. A sum's cost is null as soon
 * as one of its answers has a model the price table does not know: a partial sum printed as the cost would
 * understate it. `knownCostUSD` keeps the part that could be priced, for a reader who wants the floor. Pure.
 */
import { costOf, type PriceTable } from "./prices.ts";
import { addTokens, type Answer, type TokenCounts, zeroTokens } from "./tokens.ts";

/** What a set of answers used and cost. */
export interface Totals {
  answers: number;
  usage: TokenCounts;
  /** Estimated USD; null when a model is not in the price table. */
  costUSD: number | null;
  /** USD of the answers that could be priced. */
  knownCostUSD: number;
  /** The models used, as the API named them, sorted. */
  models: string[];
  /** Those of `models` not in the price table (an answer without a model counts as "unknown"). */
  unpriced: string[];
}

/** The totals of `answers` under `table`. */
export function totalsOf(answers: Iterable<Answer>, table: PriceTable): Totals {
  const usage = zeroTokens();
  const models = new Set<string>();
  const unpriced = new Set<string>();
  let known = 0;
  let n = 0;
  for (const a of answers) {
    n++;
    addTokens(usage, a.tokens);
    if (a.model !== null) models.add(a.model);
    const cost = costOf(table, a);
    if (cost === null) unpriced.add(a.model ?? "unknown");
    else known += cost;
  }
  return {
    answers: n,
    usage,
    costUSD: unpriced.size > 0 ? null : round(known),
    knownCostUSD: round(known),
    models: [...models].sort(),
    unpriced: [...unpriced].sort(),
  };
}

/** Dollars to a millionth of a cent at most, so sums print and compare stably. */
function round(usd: number): number {
  return Math.round(usd * 1e8) / 1e8;
}
