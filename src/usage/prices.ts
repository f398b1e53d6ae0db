// What an answer cost: list prices per model family in USD per million tokens, kept here with the day they were checked; a price file
// (SESSIONTAP_PRICES) corrects or extends them. A model not in the table has no price: its cost is unknown, never guessed.
import { isObject } from "../protocol/json.ts";
import { describe } from "../utils/describe-error.ts";

const RATE_KEYS = ["input", "output", "cacheWrite5m", "cacheWrite1h", "cacheRead"] as const;
type Rates = Record<(typeof RATE_KEYS)[number], number>;

/** A family's prices: its rates, and higher rates for a whole answer whose prompt is longer than `above` tokens. */
type ModelPrice = Rates & { longPrompt?: Rates & { above: number } };

/** `models` by family id: what `modelFamily` makes of a model id. */
export type PriceTable = { checked: string; source: string; models: Record<string, ModelPrice> };

/** Rates with the usual cache multiples of the input rate (1.25×, 2×, 0.1×) unless given. */
function rates(input: number, output: number, cacheRead = input / 10, cacheWrite5m = input * 1.25, cacheWrite1h = input * 2): Rates {
  return { input, output, cacheWrite5m, cacheWrite1h, cacheRead };
}

const SONNET = rates(3, 15);
const SONNET_4_LONG: ModelPrice = { ...SONNET, longPrompt: { above: 200_000, ...rates(6, 22.5) } };
const each = (price: ModelPrice, ...families: string[]) => Object.fromEntries(families.map((family) => [family, price]));

/** The built-in table: Anthropic's list prices (platform.claude.com, "Pricing" and each model's page). */
export const BUILTIN_PRICES: PriceTable = {
  checked: "2026-12-01",
  source: "built-in table (Anthropic list prices)",
  models: {
    ...each(rates(10, 50, 0.25), "claude-fable-5-1", "claude-mythos-5-1"),
    ...each(rates(10, 50, 1), "claude-fable-5", "claude-mythos-5"),
    "claude-opus-5-5": rates(4, 20, 0.2),
    ...each(rates(5, 25), "claude-opus-5", "claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-opus-4-5"),
    ...each(rates(15, 75), "claude-opus-4-1", "claude-opus-4-0", "claude-opus-4", "claude-3-opus"),
    "claude-sonnet-5-5": rates(2, 10, 0.1),
    "claude-sonnet-5": rates(2, 10),
    ...each(SONNET, "claude-sonnet-4-6", "claude-3-7-sonnet", "claude-3-5-sonnet"),
    ...each(SONNET_4_LONG, "claude-sonnet-4-5", "claude-sonnet-4-0", "claude-sonnet-4"),
    "claude-haiku-5-5": { ...rates(0.1, 0.5), longPrompt: { above: 100_000, ...rates(0.5, 2.5) } },
    "claude-haiku-4-5": rates(1, 5),
    "claude-3-5-haiku": rates(0.8, 4),
    "claude-3-haiku": rates(0.25, 1.25, 0.03, 0.3, 0.5),
  },
};

/** `claude-sonnet-4-5-20250929`, `us.anthropic.claude-sonnet-4-5-v1:0`, `claude-sonnet-4-5@20250929` or `…[1m]` → `claude-sonnet-4-5`. */
export function modelFamily(model: string): string {
  return model.trim().toLowerCase()
    .replace(/^.*\//, "")
    .replace(/^(?:[a-z]{2,4}\.)?anthropic\./, "")
    .replace(/-v\d+(?::\d+)?$/, "")
    .replace(/@.*$/, "")
    .replace(/\[[^\]]*\]$/, "")
    .replace(/-(?:\d{8}|latest)$/, "");
}

export function priceOf(table: PriceTable, model: string | null): ModelPrice | null {
  if (model === null) return null;
  return Object.hasOwn(table.models, modelFamily(model)) ? table.models[modelFamily(model)] : null;
}

/** What costOf reads of an Answer (tokens.ts imports this file). */
type Billed = {
  model: string | null;
  tokens: Record<"inputTokens" | "outputTokens" | "cacheCreationTokens" | "cacheReadTokens", number>;
  cacheWrite1hTokens: number;
};

export function costOf(table: PriceTable, answer: Billed): number | null {
  const price = priceOf(table, answer.model);
  if (price === null) return null;
  const t = answer.tokens;
  const prompt = t.inputTokens + t.cacheCreationTokens + t.cacheReadTokens;
  const r: Rates = price.longPrompt !== undefined && prompt > price.longPrompt.above ? price.longPrompt : price;
  const write1h = Math.min(answer.cacheWrite1hTokens, t.cacheCreationTokens);
  const dollars = t.inputTokens * r.input + t.outputTokens * r.output + (t.cacheCreationTokens - write1h) * r.cacheWrite5m + write1h * r.cacheWrite1h +
    t.cacheReadTokens * r.cacheRead;
  return dollars / 1_000_000;
}

export class PriceFileError extends Error {
  override name = "PriceFileError";
}

/** Each entry of the file (USD per million tokens) replaces or adds one family; throws PriceFileError naming the first thing wrong. */
export function parsePriceFile(text: string, where: string, base: PriceTable = BUILTIN_PRICES): PriceTable {
  let file: unknown;
  try {
    file = JSON.parse(text);
  } catch (error) {
    throw new PriceFileError(`is not JSON (${(error as Error).message.split("\n")[0]})`);
  }
  if (!isObject(file)) throw new PriceFileError(`must be a JSON object with "models"`);
  const unknown = Object.keys(file).find((k) => k !== "checked" && k !== "models");
  if (unknown !== undefined) throw new PriceFileError(`has an unknown key "${unknown}" (it takes "checked" and "models")`);
  if (file.checked !== undefined && (typeof file.checked !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(file.checked))) {
    throw new PriceFileError(`"checked" must be a date, YYYY-MM-DD`);
  }
  if (!isObject(file.models)) throw new PriceFileError(`"models" must be an object of model ids to rates`);
  const out: Record<string, ModelPrice> = { ...base.models };
  for (const [id, entry] of Object.entries(file.models)) {
    if (!isObject(entry)) throw new PriceFileError(`"${id}" must be an object of rates`);
    const odd = Object.keys(entry).find((k) => !(RATE_KEYS as readonly string[]).includes(k));
    if (odd !== undefined) throw new PriceFileError(`"${id}" has an unknown rate "${odd}" (it takes ${RATE_KEYS.join(", ")})`);
    const bad = RATE_KEYS.find((k) => entry[k] !== undefined && (typeof entry[k] !== "number" || !Number.isFinite(entry[k]) || (entry[k] as number) < 0));
    if (bad !== undefined) throw new PriceFileError(`"${id}".${bad} must be a number of dollars per million tokens, 0 or more`);
    if (typeof entry.input !== "number" || typeof entry.output !== "number") throw new PriceFileError(`"${id}" needs at least "input" and "output"`);
    const r = entry as Record<string, number | undefined>;
    out[modelFamily(id)] = rates(entry.input, entry.output, r.cacheRead, r.cacheWrite5m, r.cacheWrite1h);
  }
  return { checked: typeof file.checked === "string" ? file.checked : base.checked, source: `${where} over the ${base.source}`, models: out };
}

export async function loadPrices(fs: { readText(path: string): Promise<string> }, path: string | null): Promise<PriceTable> {
  if (path === null) return BUILTIN_PRICES;
  const where = `the price file ${path} (SESSIONTAP_PRICES)`;
  const text = await fs.readText(path).catch((error) => {
    throw new PriceFileError(`cannot read ${where}: ${describe(error)}`);
  });
  try {
    return parsePriceFile(text, path);
  } catch (error) {
    throw new PriceFileError(`${where} ${(error as Error).message}`);
  }
}
