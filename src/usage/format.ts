/** Token counts, dollars and sizes as people read them in a table or a header. Pure. */
import type { TokenCounts } from "./tokens.ts";

/** A token count: 950, 12.3k, 4.56M. */
export function tokensShort(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : n < 100_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(n < 10_000_000 ? 2 : n < 100_000_000 ? 1 : 0)}M`;
}

/** A byte count: 512 B, 15.2 KB, 3.4 MB (units of 1024). */
export function bytesShort(n: number): string {
  const units = ["KB", "MB", "GB", "TB"];
  let v = n;
  let i = -1;
  while (v >= 1024 && i < units.length - 1) (v /= 1024), i++;
  return i < 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** Dollars: "$12.34", "$0.0042" (small sums keep two significant digits), "?" for unknown. */
export function usd(n: number | null): string {
  if (n === null) return "?";
  if (n === 0) return "$0.00";
  if (n >= 0.01) return `$${n.toFixed(2)}`;
  return `$${n.toPrecision(2)}`;
}

/** A one-line account of tokens and cost: "12.3k in · 456 out · 1.20k cache write · 98.0k cache read · $0.42". */
export function usageLine(usage: TokenCounts, costUSD: number | null, unpriced: string[] = []): string {
  const parts = [`${tokensShort(usage.inputTokens)} in`, `${tokensShort(usage.outputTokens)} out`];
  if (usage.cacheCreationTokens > 0) parts.push(`${tokensShort(usage.cacheCreationTokens)} cache write`);
  if (usage.cacheReadTokens > 0) parts.push(`${tokensShort(usage.cacheReadTokens)} cache read`);
  parts.push(costUSD === null ? `cost unknown${unpriced.length > 0 ? ` (${unpriced.join(", ")} not in the price table)` : ""}` : `≈ ${usd(costUSD)}`);
  return parts.join(" · ");
}
