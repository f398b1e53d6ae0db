// A mirrored session's facts for `list`, `show`, `usage`, the viewer and the exports: its title, times, counts and cost. Pure.
import { jsonObject } from "../protocol/json.ts";
import { plural } from "../utils/describe-error.ts";
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";
import { type SessionAnswers, sessionAnswers, totalsOf } from "../usage/tokens.ts";
import {
  blocksOf,
  firstPrompt,
  isApiSystem,
  isConversation,
  isToolResultOnly,
  isTypedPrompt,
  messageOf,
  oneLine,
  parentOf,
  type Rec,
  scrubControl,
  timeOf,
  uuidOf,
} from "./records.ts";
import { buildTree, currentBranch, shape, type Tree } from "./tree.ts";

export type SessionData = {
  dir: string;
  records: Rec[];
  malformed: number;
  files: number;
  bytes: number;
  agents: { dir: string; records: Rec[] }[];
  side: Rec[];
};

/** How every reader counts: one answer per message however many records; `context`: records of the context Claude Code injects. */
export type Counts = { prompts: number; answers: number; toolResults: number; context: number };

export function countRecords(records: Rec[]): Counts {
  const c: Counts = { prompts: 0, answers: 0, toolResults: 0, context: 0 };
  const answers = new Set<unknown>();
  for (const r of records) {
    if (r.type === "assistant") answers.add(messageOf(r)?.id ?? r);
    else if (isToolResultOnly(r)) c.toolResults += blocksOf(messageOf(r)?.content).length;
    else if (isTypedPrompt(r)) c.prompts++;
    else if (r.type === "user" || r.type === "attachment" || isApiSystem(r)) c.context++;
  }
  return { ...c, answers: answers.size };
}

export function countsText(c: Counts): string {
  const more = [c.toolResults > 0 ? plural(c.toolResults, "tool result") : "", c.context > 0 ? `${plural(c.context, "record")} of Claude Code's context` : ""];
  return `${plural(c.prompts, "prompt")} and ${plural(c.answers, "answer")}${more.some(Boolean) ? ` (${more.filter(Boolean).join("; ")})` : ""}`;
}

export type SessionSummary = ReturnType<typeof summarize>;

export function sessionIdOf(dir: string, records: Rec[]): string | null {
  const id = records.find((r) => typeof r.sessionId === "string" && r.sessionId !== "")?.sessionId;
  return typeof id === "string" ? id : dir === "unknown" || dir.startsWith("inv-") ? null : dir;
}

export function summarize(data: SessionData, tree: Tree = buildTree(data.records), prices: PriceTable = BUILTIN_PRICES) {
  const times = data.records.map(timeOf).filter(Number.isFinite);
  const iso = (ms: number) => (Number.isFinite(ms) ? new Date(ms).toISOString() : null);
  const lists = [currentBranch(tree), data.records.filter((r) => isConversation(r) || isApiSystem(r))];
  const newest = (key: string) => lists.map((l) => l.findLast((r) => typeof r[key] === "string" && r[key] !== "")?.[key]).find((v) => v !== undefined);
  const totals = totalsOf(sessionAnswers(data), prices);
  const { leaves, compactions } = shape(tree);
  return {
    sessionId: sessionIdOf(data.dir, data.records),
    dir: data.dir,
    firstTimestamp: iso(times.reduce((a, b) => Math.min(a, b), Infinity)),
    lastTimestamp: iso(times.reduce((a, b) => Math.max(a, b), -Infinity)),
    records: data.records.length,
    counts: countRecords(data.records),
    subagentAnswers: countRecords(data.agents.flatMap((a) => a.records)).answers,
    sideAnswers: countRecords(data.side).answers,
    bytes: data.bytes,
    files: data.files,
    cwd: (newest("cwd") as string | undefined) ?? null,
    gitBranch: (newest("gitBranch") as string | undefined) ?? null,
    firstPrompt: firstPrompt(data.records),
    title: sessionTitle(data.side, data.records),
    usage: totals.usage,
    costUSD: totals.costUSD,
    models: totals.models,
    leafUuid: tree.newestLeaf === null ? null : uuidOf(tree.newestLeaf),
    leaves,
    compactions,
    malformedLines: data.malformed,
  };
}

/** A session as restore and the drill take it. */
export function withTree(data: SessionData) {
  const tree = buildTree(data.records);
  return { data, tree, summary: summarize(data, tree), others: data };
}

export function sessionUsage(data: SessionData, prices: PriceTable): SessionAnswers {
  const s = summarize(data, buildTree(data.records), prices);
  return { sessionId: s.sessionId, dir: data.dir, cwd: s.cwd, answers: sessionAnswers(data) };
}

const textOf = (r: Rec) => blocksOf(messageOf(r)?.content).filter((b) => b.type === "text" && typeof b.text === "string").map((b) => b.text).join("");

export function titleFromAnswer(r: Rec): string | null {
  if (r.type !== "assistant") return null;
  const text = textOf(r).trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/, "$1");
  const value = text.startsWith("{") ? jsonObject(text) : null; // null: not a JSON answer (cut short, refused)
  return typeof value?.title === "string" && value.title.trim() !== "" ? value.title.trim() : null;
}

/** The newest answer to Claude Code's title request: its user message opens with `<session>` (another may answer a JSON `title` too). */
export function generatedTitle(side: readonly Rec[]): string | null {
  const asks = new Set(side.filter((r) => r.type === "user" && textOf(r).startsWith("<session>\n")).map(uuidOf));
  const answer = side.findLast((r) => parentOf(r) !== null && asks.has(parentOf(r)) && titleFromAnswer(r) !== null);
  return answer === undefined ? null : titleFromAnswer(answer);
}

export function sessionTitle(side: readonly Rec[], records: Rec[]): string | null {
  return oneLine(scrubControl(generatedTitle(side) ?? ""), 100) || firstPrompt(records, 100);
}

export const titleRecord = (sessionId: string, title: string): Rec => ({ type: "ai-title", aiTitle: title, sessionId });
