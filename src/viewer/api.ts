// The viewer's data behind `/_tap/api/`, and the JSON shapes the page reads: docs/DESIGN.md "The viewer".
import { nameInside } from "../protocol/session-id.ts";
import { type ExportFormat, exportText } from "../transcript/render.ts";
import { continuesMessage, type Rec, uuidOf } from "../transcript/records.ts";
import { renderItemsHtml, renderRecordHtml } from "../transcript/render.ts";
import { search, type SearchHit, termsMatcher } from "../transcript/search.ts";
import { type SessionData, sessionIdOf, type SessionSummary, sessionTitle, summarize } from "../transcript/summary.ts";
import { buildTree, outline, type Tree } from "../transcript/tree.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { describeRestore, type RestoreOutcome, restoreSession, resumeCommand } from "../restore/restore-session.ts";
import { type ListEntry, SessionCatalog } from "../storage/mirror-reader.ts";
import type { PriceTable } from "../usage/prices.ts";
import { type Answer as BilledAnswer, type SessionAnswers, sessionAnswers, totalTokens, type UsageReport, usageReport } from "../usage/tokens.ts";
import { localDate, offsetLabel, type Zone } from "../utils/local-time.ts";
import { type LiveBatch, LiveFollower } from "./live.ts";

export type { SearchHit } from "../transcript/search.ts";
export type { ListEntry } from "../storage/mirror-reader.ts";

/** The guard's alert on a session: what became of Claude Code's transcript, since when, and the command that brings it back. */
export type GuardAlert = { state: string; since: string; command: string };
/** `api/sessions`: the `list --json` objects, each with the guard's alert (added in the relay's thread, which hears the guard). */
export type ViewerSession = ListEntry & { guard: GuardAlert | null };
type Prices = { source: string; checked: string };
/** `api/sessions/:id`: the facts (the guard's alert added as for the list), the conversation as HTML (rendered and escaped by the tap), and where its reading path ends. */
export type SessionView = { session: ListEntry & { guard?: GuardAlert | null }; tail: string | null; html: string; prices: Prices };
export type RestoreReply = { ok: true; outcome: RestoreOutcome; lines: string[]; resume: string } | {
  ok: false;
  error: string;
  outcome: RestoreOutcome | null;
};
/** An `api/events` `records` event: new records of one conversation (each rendered and escaped by the tap), and the bytes the session's files now hold. */
export type LiveEvent = Omit<LiveBatch, "records"> & { records: { uuid: string | null; parentUuid: string | null; type: unknown; html: string }[] };
/** A project's or a model's part of each day: its tokens and the cost of those that could be priced. */
export type StackPart = { key: string; days: { date: string; tokens: number; cost: number }[] };
/** `api/usage`: `usage --json`'s report, today in the tap's zone, and each day split by project and by model. */
export type UsageView = UsageReport & { timeZone: string; today: string; prices: Prices; stacks: { project: StackPart[]; model: StackPart[] } };
export type Answer<T = unknown> = { status: 200 | 400 | 404 | 409; body: T };
export type ExportAnswer = Answer<string> & { type: string; filename: string };
/** What the reader is built from (plain data: it crosses into the viewer's Worker). */
export type ReaderSettings = { mirrorDir: string; claudeDir: string; pollMs: number; prices: PriceTable };
/** What the reader says unasked: new records of a followed session, or a failure of the follower. */
export type ReaderNote = { records: LiveEvent } | { error: string };

const TYPES: Record<string, string> = { md: "text/markdown", html: "text/html", jsonl: "application/x-ndjson" };
/** The days the page charts are the tap's days, as `usage` prints them. */
const LOCAL: Zone = { offsetMinutes: (ms) => -new Date(ms).getTimezoneOffset() };

/** The viewer's API over one mirror root; every method is called from the relay's thread by name. */
export class ViewerData {
  private readonly catalog: SessionCatalog;
  private readonly prices: PriceTable;
  private readonly live: LiveFollower;

  constructor(private readonly fs: FsAdapter, settings: ReaderSettings, tell: (note: ReaderNote) => void, private readonly clock = Date.now) {
    this.prices = settings.prices;
    this.catalog = new SessionCatalog(fs, settings.mirrorDir, settings.claudeDir, undefined, this.prices, clock);
    const failed = (error: unknown) => tell({ error: error instanceof Error ? error.message : String(error) });
    this.live = new LiveFollower(fs, settings.mirrorDir, settings.pollMs, (batch) => tell({ records: liveEvent(batch) }), failed);
  }

  async sessions(): Promise<ListEntry[]> {
    return await this.catalog.list();
  }

  async session(query: string): Promise<Answer> {
    const found = await this.open(query);
    if ("status" in found) return found;
    const session = (await this.catalog.judge(found.data)).entry;
    const html = renderItemsHtml(outline(found.tree), this.prices);
    return { status: 200, body: { session, tail: session.leafUuid, html, prices: this.priceSource() } satisfies SessionView };
  }

  /** Records of every session holding all the query's terms (at most 100), with their session's title. */
  async search(query: string): Promise<SearchHit[]> {
    const match = termsMatcher(query);
    if (match === null) return [];
    const all = await this.catalog.reader.loadAll();
    return search(
      all.map((d) => ({ sessionId: sessionIdOf(d.dir, d.records), dir: d.dir, title: sessionTitle(d.side, d.records), records: d.records })),
      match,
      100,
    );
  }

  /** As `sessiontap restore` does it (the same code): a dry run says what would be written; `force` replaces a transcript with content, keeping a backup. */
  async restore(query: string, options: { dryRun: boolean; force: boolean }): Promise<Answer> {
    const found = await this.open(query);
    if ("status" in found) return found;
    const { claudeDir } = this.catalog;
    const result = await restoreSession(this.fs, { summary: found.summary, tree: found.tree, others: found.data }, {
      claudeDir,
      cwd: null,
      ...options,
      now: this.clock(),
    });
    if (!result.ok) return { status: 409, body: { ok: false, error: result.why, outcome: result.outcome } satisfies RestoreReply };
    const outcome = result.outcome;
    return { status: 200, body: { ok: true, outcome, lines: describeRestore(outcome), resume: resumeCommand(outcome) } satisfies RestoreReply };
  }

  /** A session as `export --format` writes it. */
  async exportSession(query: string, format: string): Promise<ExportAnswer> {
    const refused = (status: ExportAnswer["status"], body: string) => ({ status, body, type: "text/plain; charset=utf-8", filename: "" });
    if (!(format in TYPES)) return refused(400, "format must be md, html or jsonl\n");
    const found = await this.open(query);
    if ("status" in found) return refused(found.status, "no single session matches\n");
    const { sessionId, dir } = found.summary;
    return {
      status: 200,
      body: exportText({ records: found.data.records, tree: found.tree, summary: found.summary }, format as ExportFormat, this.prices),
      type: `${TYPES[format]}; charset=utf-8`,
      filename: (sessionId === null ? null : nameInside(sessionId, `.${format}`)) ?? `${dir}.${format}`,
    };
  }

  /** What `usage --json` reports, with each day split by project and by model for the home's chart. */
  async usage(): Promise<UsageView> {
    const now = this.clock();
    const sessions: SessionAnswers[] = (await this.catalog.reader.loadAll()).map((data) => {
      const s = summarize(data, buildTree(data.records), this.prices);
      return { sessionId: s.sessionId, dir: data.dir, cwd: s.cwd, title: s.title, answers: sessionAnswers(data) };
    });
    const stack = (keyOf: (s: SessionAnswers, a: BilledAnswer) => string): StackPart[] => {
      const groups = new Map<string, SessionAnswers[]>();
      const add = (key: string, s: SessionAnswers) => (groups.get(key) ?? groups.set(key, []).get(key)!).push(s);
      for (const s of sessions) for (const a of s.answers) add(keyOf(s, a), { ...s, answers: [a] });
      const days = (list: SessionAnswers[]) =>
        usageReport(list, this.prices, LOCAL).days.map((d) => ({ date: d.date, tokens: totalTokens(d.usage), cost: d.knownCostUSD }));
      return [...groups].map(([key, list]) => ({ key, days: days(list) }));
    };
    return {
      timeZone: offsetLabel(now, LOCAL),
      today: localDate(now, LOCAL),
      prices: this.priceSource(),
      ...usageReport(sessions, this.prices, LOCAL),
      stacks: { project: stack((s) => s.cwd ?? "unknown"), model: stack((_, a) => a.model ?? "unknown") },
    };
  }

  /** Follows session directory `dir` (a plain name: routes.ts checks) for follow `id`; resolves with the bytes its files hold now. */
  async follow(id: number, dir: string): Promise<number> {
    return await this.live.follow(id, dir);
  }

  async unfollow(id: number): Promise<void> {
    this.live.unfollow(id);
  }

  async close(): Promise<void> {
    this.live.unfollow(null);
  }

  private priceSource() {
    return { source: this.prices.source, checked: this.prices.checked };
  }

  /** A session by id or prefix, read and summarized, or the answer that says why not. */
  private async open(query: string): Promise<{ data: SessionData; tree: Tree; summary: SessionSummary } | Answer & { status: 404 | 409 }> {
    const found = await this.catalog.reader.lookup(query);
    if (found.kind === "none") return { status: 404, body: { error: `no mirrored session matches "${query}"` } };
    if (found.kind === "ambiguous") {
      return { status: 409, body: { error: `"${query}" matches ${found.candidates.length} sessions`, candidates: found.candidates } };
    }
    const tree = buildTree(found.data.records);
    return { data: found.data, tree, summary: summarize(found.data, tree, this.prices) };
  }
}

function liveEvent(batch: LiveBatch): LiveEvent {
  let previous: Rec | null = null;
  const records = batch.records.map((r) => {
    const html = renderRecordHtml(r, { continued: continuesMessage(previous, r) });
    previous = r;
    return { uuid: uuidOf(r), parentUuid: typeof r.parentUuid === "string" ? r.parentUuid : null, type: r.type, html };
  });
  return { ...batch, records };
}
