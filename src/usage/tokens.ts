/**
 * Token counts from the recorded answers: every assistant record's `message.usage` as the API reported it
 * (input, output, cache-creation and cache-read tokens). Each answer counts once: Claude Code's own
 * transcripts repeat one answer's usage on every block's record (one `message.id`), and a record rebuilt
 * from a later request's history (`reconstructed`) carries none the API reported. Pure.
 */

/** One record of a mirror or transcript file. */
import { isObject } from "../protocol/json.ts";
type Rec = Record<string, unknown>;

/** The four token sums (`list --json` `usage`). */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
  cacheCreationTokens: number;
  cacheReadTokens: number;
}

/** Where in a session an answer was made: its conversation, a subagent, or a side request (a title, a summary). */
export type AnswerScope = "main" | "subagent" | "side";

/** One answer the API billed. */
export interface Answer {
  /** The message id, or null when the record has none. */
  id: string | null;
  model: string | null;
  /** The record's time, ms since the epoch (NaN when unknown). */
  time: number;
  scope: AnswerScope;
  tokens: TokenCounts;
  /** The cache writes made for an hour (priced higher than the default five minutes); part of `cacheCreationTokens`. */
  cacheWrite1hTokens: number;
}

/** No tokens. */
export function zeroTokens(): TokenCounts {
  return { inputTokens: 0, outputTokens: 0, cacheCreationTokens: 0, cacheReadTokens: 0 };
}

/** Adds `b` into `a` (mutates and returns `a`). */
export function addTokens(a: TokenCounts, b: TokenCounts): TokenCounts {
  a.inputTokens += b.inputTokens;
  a.outputTokens += b.outputTokens;
  a.cacheCreationTokens += b.cacheCreationTokens;
  a.cacheReadTokens += b.cacheReadTokens;
  return a;
}

/** Every token of the counts. */
export function totalTokens(t: TokenCounts): number {
  return t.inputTokens + t.outputTokens + t.cacheCreationTokens + t.cacheReadTokens;
}

/** A whole, non-negative count, else 0. */
function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/** The answer a record carries, or null (not an assistant record, no usage reported, or rebuilt from history). */
export function answerOf(r: Rec, scope: AnswerScope): Answer | null {
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
  if (Object.values(tokens).every((n) => n === 0)) return null;
  const split = isObject(usage.cache_creation) ? usage.cache_creation : null;
  return {
    id: typeof message?.id === "string" && message.id !== "" ? message.id : null,
    model: typeof message?.model === "string" && message.model !== "" ? message.model : null,
    time: typeof r.timestamp === "string" ? Date.parse(r.timestamp) : Number.NaN,
    scope,
    tokens,
    cacheWrite1hTokens: Math.min(tokens.cacheCreationTokens, count(split?.ephemeral_1h_input_tokens)),
  };
}

/**
 * The answers of `records`, each message id once. Claude Code's own transcripts repeat an answer on each
 * block's record with the output count growing, so the records of one id merge by the largest of each
 * count. `seen` carries ids across calls: an answer found in two places counts once, where first found.
 */
export function answersOf(records: Rec[], scope: AnswerScope, seen: Map<string, Answer> = new Map()): Answer[] {
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
    for (const key of Object.keys(earlier.tokens) as (keyof TokenCounts)[]) earlier.tokens[key] = Math.max(earlier.tokens[key], answer.tokens[key]);
    earlier.cacheWrite1hTokens = Math.max(earlier.cacheWrite1hTokens, answer.cacheWrite1hTokens);
  }
  return out;
}

/** Every answer of a session: its conversation, its subagents and its side requests. */
export function sessionAnswers(session: { records: Rec[]; agents: { records: Rec[] }[]; side: Rec[] }): Answer[] {
  const seen = new Map<string, Answer>();
  return [
    ...answersOf(session.records, "main", seen),
    ...answersOf(session.agents.flatMap((a) => a.records), "subagent", seen),
    ...answersOf(session.side, "side", seen),
  ];
}
