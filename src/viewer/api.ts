/**
 * The viewer's data behind `/_tap/api/…`: the session list, one session rendered, search across
 * sessions, exports, restoring a session into Claude Code, and new records as they are written, rendered.
 * Framework-free: routes.ts maps routes onto these methods.
 */
import { nameInside } from "../protocol/id-name.ts";
import { exportText } from "../transcript/render-md.ts";
import { continuesMessage, type Rec, uuidOf } from "../transcript/records.ts";
import { renderItemsHtml, renderRecordHtml } from "../transcript/render-html.ts";
import { search, type SearchHit, termsMatcher } from "../transcript/search.ts";
import { sessionIdOf, sessionTitle, summarize } from "../transcript/summary.ts";
import { buildTree, outline } from "../transcript/tree.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { describeRestore, restoreSession, resumeCommand } from "../restore/restore-session.ts";
import { SessionCatalog } from "../storage/mirror-reader.ts";
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";
import type { LiveEvent, RestoreReply, SessionView, ViewerSession } from "./api-json.ts";
import type { Answer, ExportAnswer } from "./deps.ts";
import type { LiveBatch, LiveWatcher } from "./live.ts";
import type { ViewerReader } from "./reader.ts";

/**
 * The viewer's data over one mirror root (a ViewerReader: read in the viewer's Worker, or in this thread).
 * A session's `guard` is null here: the guard's alerts live in the relay's thread, which adds them (index.ts).
 */
export class ViewerData implements ViewerReader {
  private readonly catalog: SessionCatalog;
  private readonly prices: PriceTable;
  private readonly clock: () => number;

  constructor(
    private readonly fs: FsAdapter,
    mirrorDir: string,
    private readonly claudeDir: string,
    readonly watcher: LiveWatcher,
    options: { prices?: PriceTable; clock?: () => number } = {},
  ) {
    this.prices = options.prices ?? BUILTIN_PRICES;
    this.clock = options.clock ?? Date.now;
    this.catalog = new SessionCatalog(fs, mirrorDir, claudeDir, undefined, this.prices, this.clock);
  }

  /** Every session, most recently active first (the `list --json` objects). */
  async sessions(): Promise<ViewerSession[]> {
    return (await this.catalog.list()).map((s) => ({ ...s, guard: null }));
  }

  /** One session: its facts, its conversation as HTML, and the uuid its reading path ends at. */
  async session(query: string): Promise<Answer> {
    const found = await this.catalog.reader.lookup(query);
    if (found.kind === "none") return { status: 404, body: { error: `no mirrored session matches "${query}"` } };
    if (found.kind === "ambiguous") {
      return { status: 409, body: { error: `"${query}" matches ${found.candidates.length} sessions`, candidates: found.candidates } };
    }
    const tree = buildTree(found.data.records);
    const session: ViewerSession = { ...(await this.catalog.judge(found.data)).entry, guard: null };
    return {
      status: 200,
      body: {
        session,
        tail: session.leafUuid,
        html: renderItemsHtml(outline(tree), this.prices),
        prices: { source: this.prices.source, checked: this.prices.checked },
      } satisfies SessionView,
    };
  }

  /** Records of every session containing all the query's terms (at most 100), with their session's title. */
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

  /**
   * Restores a session into Claude Code's projects directory, as `sessiontap restore` does (the same code):
   * `dryRun` first says what would be written; `force` replaces a transcript that has content, keeping a backup.
   */
  async restore(query: string, options: { dryRun: boolean; force: boolean }): Promise<Answer> {
    const found = await this.catalog.reader.lookup(query);
    if (found.kind === "none") return { status: 404, body: { error: `no mirrored session matches "${query}"` } };
    if (found.kind === "ambiguous") {
      return { status: 409, body: { error: `"${query}" matches ${found.candidates.length} sessions`, candidates: found.candidates } };
    }
    const tree = buildTree(found.data.records);
    const summary = summarize(found.data, tree, this.prices);
    const result = await restoreSession(this.fs, { summary, tree, others: found.data }, {
      claudeDir: this.claudeDir,
      cwd: null,
      ...options,
      now: this.clock(),
    });
    if (!result.ok) return { status: 409, body: { ok: false, error: result.why, outcome: result.outcome } satisfies RestoreReply };
    return {
      status: 200,
      body: { ok: true, outcome: result.outcome, lines: describeRestore(result.outcome), resume: resumeCommand(result.outcome) } satisfies RestoreReply,
    };
  }

  /** A session exported as `export --format` writes it. */
  async exportSession(query: string, format: string): Promise<ExportAnswer> {
    if (format !== "md" && format !== "html" && format !== "jsonl") {
      return { status: 400, body: "format must be md, html or jsonl\n", type: "text/plain; charset=utf-8", filename: "" };
    }
    const found = await this.catalog.reader.lookup(query);
    if (found.kind !== "found") {
      return { status: found.kind === "none" ? 404 : 409, body: "no single session matches\n", type: "text/plain; charset=utf-8", filename: "" };
    }
    const tree = buildTree(found.data.records);
    const summary = summarize(found.data, tree, this.prices);
    const type = format === "md" ? "text/markdown; charset=utf-8" : format === "html" ? "text/html; charset=utf-8" : "application/x-ndjson; charset=utf-8";
    return {
      status: 200,
      body: exportText({ records: found.data.records, tree, summary }, format, this.prices),
      type,
      filename: (summary.sessionId === null ? null : nameInside(summary.sessionId, `.${format}`)) ?? `${summary.dir}.${format}`,
    };
  }

  /** Hands `listener` each batch of new records, rendered, until the function it resolves with is called. */
  subscribe(listener: (event: LiveEvent) => void): Promise<() => void> {
    return this.watcher.subscribe((batch) => listener(liveEvent(batch)));
  }

  /** A mirror file was just written: its session is looked at now, not at the next poll. */
  hint(path: string): void {
    this.watcher.hint(path);
  }

  /** Stops watching (the tap is stopping). */
  close(): void {
    this.watcher.close();
  }
}

/** What the page receives for a batch: where it belongs, and each record's uuid, parent and HTML. */
function liveEvent(batch: LiveBatch): LiveEvent {
  let previous: Rec | null = null;
  const records = batch.records.map((r) => {
    const html = renderRecordHtml(r, { continued: continuesMessage(previous, r) });
    previous = r;
    return { uuid: uuidOf(r), parentUuid: typeof r.parentUuid === "string" ? r.parentUuid : null, type: r.type, html };
  });
  return { dir: batch.dir, sessionId: sessionIdOf(batch.dir, batch.records), scope: batch.scope, agent: batch.agent, records };
}
