/**
 * One line's worth of facts about a mirrored session (`sessiontap list`, the viewer's session list). Pure:
 * the caller reads the files.
 */
import { firstPrompt, isApiSystem, isConversation, type Rec, timeOf, uuidOf } from "./records.ts";
import { sessionTitle } from "./title.ts";
import { buildTree, currentBranch, shape, type Tree } from "./tree.ts";
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";
import { sessionAnswers, type TokenCounts, totalsOf } from "../usage/tokens.ts";

/** What a session's directory holds, as read from disk. */
export interface SessionData {
  /** The session's directory name under the mirror root. */
  dir: string;
  /** Main-conversation records, oldest file first, in file order. */
  records: Rec[];
  malformed: number;
  files: number;
  /** Bytes of every mirror file of the session (main, subagents, side). */
  bytes: number;
  /** Each subagent's records (by its directory name under `subagents/`), in file order. */
  agents: { dir: string; records: Rec[] }[];
  /** Records of its side requests (titles, summaries, probes), in file order. */
  side: Rec[];
}

/** The facts `list` shows (`list --json`, docs/DESIGN.md "Command line"). */
export interface SessionSummary {
  sessionId: string | null;
  dir: string;
  firstTimestamp: string | null;
  lastTimestamp: string | null;
  /** Records of the main conversation. */
  records: number;
  userRecords: number;
  assistantRecords: number;
  bytes: number;
  files: number;
  cwd: string | null;
  gitBranch: string | null;
  firstPrompt: string | null;
  /** The title Claude Code generated for the session, else its first prompt (one line). */
  title: string | null;
  /** Tokens of every answer of the session (conversation, subagents, side requests), from the recorded usage. */
  usage: TokenCounts;
  /** Estimated cost in USD of those answers; null when a model is not in the price table. */
  costUSD: number | null;
  /** The models that answered, sorted. */
  models: string[];
  /** The newest leaf: where the current branch ends. */
  leafUuid: string | null;
  /** Leaves of the tree (1 for a conversation never rewound). */
  leaves: number;
  compactions: number;
  malformedLines: number;
  subagentRecords: number;
  sideRecords: number;
}

/** The session id the records carry (the first non-empty one), else the directory name when it is an id. */
export function sessionIdOf(dir: string, records: Rec[]): string | null {
  for (const r of records) if (typeof r.sessionId === "string" && r.sessionId !== "") return r.sessionId;
  return dir === "unknown" || dir.startsWith("inv-") ? null : dir;
}

/** The newest non-null value of `key` on the current branch, else anywhere (newest first). */
function newestValue(branch: Rec[], all: Rec[], key: string): string | null {
  for (const list of [branch, all]) {
    for (let i = list.length - 1; i >= 0; i--) {
      const v = list[i][key];
      if (typeof v === "string" && v !== "") return v;
    }
  }
  return null;
}

/** Summarises a session (costs from `prices`); `tree` may be passed when the caller built it already. */
export function summarize(data: SessionData, tree: Tree = buildTree(data.records), prices: PriceTable = BUILTIN_PRICES): SessionSummary {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  let firstText: string | null = null;
  let lastText: string | null = null;
  for (const r of data.records) {
    const t = timeOf(r);
    if (!Number.isFinite(t)) continue;
    if (t < first) (first = t), (firstText = r.timestamp as string);
    if (t > last) (last = t), (lastText = r.timestamp as string);
  }
  const branch = currentBranch(tree);
  const counts = shape(tree);
  const conversation = data.records.filter((r) => isConversation(r) || isApiSystem(r));
  const totals = totalsOf(sessionAnswers(data), prices);
  return {
    sessionId: sessionIdOf(data.dir, data.records),
    dir: data.dir,
    firstTimestamp: firstText === null ? null : new Date(first).toISOString(),
    lastTimestamp: lastText === null ? null : new Date(last).toISOString(),
    records: data.records.length,
    userRecords: data.records.filter((r) => r.type === "user").length,
    assistantRecords: data.records.filter((r) => r.type === "assistant").length,
    bytes: data.bytes,
    files: data.files,
    cwd: newestValue(branch, conversation, "cwd"),
    gitBranch: newestValue(branch, conversation, "gitBranch"),
    firstPrompt: firstPrompt(data.records),
    title: sessionTitle(data.side, data.records),
    usage: totals.usage,
    costUSD: totals.costUSD,
    models: totals.models,
    leafUuid: tree.newestLeaf === null ? null : uuidOf(tree.newestLeaf),
    leaves: counts.leaves,
    compactions: counts.compactions,
    malformedLines: data.malformed,
    subagentRecords: data.agents.reduce((n, a) => n + a.records.length, 0),
    sideRecords: data.side.length,
  };
}
