// The data behind `/_tap/api/`, read in the viewer's own thread, and the JSON shapes the page reads: docs/DESIGN.md "The viewer".
import { join } from "node:path/posix";
import { jsonObject } from "../protocol/json.ts";
import { nameInside } from "../protocol/session-id.ts";
import { describeRestore, type RestoreOutcome, restoreSession, resumeCommand } from "../restore/restore-session.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { rootRedactor } from "../storage/binding-files.ts";
import { JsonlFollower } from "../storage/jsonl-follower.ts";
import { conversations, jsonlFiles, type LastDrill, lastDrill, type ListEntry, SessionCatalog } from "../storage/mirror-reader.ts";
import { continuesMessage, type Rec, uuidOf } from "../transcript/records.ts";
import { type ExportFormat, exportSession, renderItemsHtml, renderRecordHtml } from "../transcript/render.ts";
import { search, type SearchHit, termsMatcher } from "../transcript/search.ts";
import { type SessionData, sessionIdOf, sessionUsage, withTree } from "../transcript/summary.ts";
import type { TranscriptState } from "../transcript/transcript-state.ts";
import { buildTree, outline } from "../transcript/tree.ts";
import type { PriceTable } from "../usage/prices.ts";
import { type UsageReport, usageReport } from "../usage/tokens.ts";
import { LOCAL, localDate, offsetLabel } from "../utils/local-time.ts";

export type { SearchHit } from "../transcript/search.ts";
export type { ListEntry } from "../storage/mirror-reader.ts";

export type GuardAlert = { state: TranscriptState; since: string; command: string };
/** The `list --json` objects, each with the guard's alert (added in the relay's thread, which hears the guard). */
export type ViewerSession = ListEntry & { guard: GuardAlert | null };
type Prices = { source: string; checked: string };
export type SessionView = { session: ListEntry & { guard?: GuardAlert | null }; tail: string | null; html: string; prices: Prices };
type Refused = { ok: false; error: string; outcome: RestoreOutcome | null };
export type RestoreReply = { ok: true; outcome: RestoreOutcome; lines: string[]; resume: string } | Refused;
type Conversation = Awaited<ReturnType<typeof conversations>>["dirs"][number];
/** New records of one conversation of a followed session, and the bytes the session's files now hold. */
export type LiveEvent = Omit<Conversation, "path"> & { dir: string; records: ReturnType<typeof rendered>; bytes: number };
export type UsageView = UsageReport & { timeZone: string; today: string; prices: Prices; drill: LastDrill | { error: string } | null };
export type Answer<T = unknown> = { status: 200 | 400 | 404 | 409; body: T };
export type ReaderSettings = { mirrorDir: string; claudeDir: string; pollMs: number; prices: PriceTable; redact: boolean };
export type ReaderNote = { records: LiveEvent } | { error: string };

const TYPES: Record<string, string> = { md: "text/markdown", html: "text/html", jsonl: "application/x-ndjson" };
const decoder = new TextDecoder();
const priceSource = ({ source, checked }: PriceTable): Prices => ({ source, checked });

export class ViewerData {
  private readonly catalog: SessionCatalog;
  private readonly follows = new Map<number, string>();
  private readonly files = new Map<string, Map<string, JsonlFollower>>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private looking: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly fs: FsAdapter,
    private readonly settings: ReaderSettings,
    private readonly tell: (note: ReaderNote) => void,
    private readonly clock = Date.now,
  ) {
    this.catalog = new SessionCatalog(fs, settings.mirrorDir, settings.claudeDir, undefined, settings.prices, clock);
  }

  async sessions(): Promise<ListEntry[]> {
    return await this.catalog.list();
  }

  async session(query: string): Promise<Answer> {
    const found = await this.open(query);
    if ("status" in found) return found;
    const session = (await this.catalog.judge(found)).entry;
    const html = renderItemsHtml(outline(buildTree(found.records)), this.settings.prices);
    return { status: 200, body: { session, tail: session.leafUuid, html, prices: priceSource(this.settings.prices) } satisfies SessionView };
  }

  async search(query: string): Promise<SearchHit[]> {
    const match = termsMatcher(query);
    if (match === null) return [];
    return search(await this.catalog.reader.loadAll(), match, 100);
  }

  async restore(query: string, options: { dryRun: boolean; force: boolean }): Promise<Answer> {
    const found = await this.open(query);
    if ("status" in found) return found;
    const request = { claudeDir: this.catalog.claudeDir, cwd: null, ...options, now: this.clock() };
    const result = await restoreSession(this.fs, withTree(found), request);
    if (!result.ok) return { status: 409, body: { ok: false, error: result.why, outcome: result.outcome } satisfies RestoreReply };
    const outcome = result.outcome;
    return { status: 200, body: { ok: true, outcome, lines: describeRestore(outcome), resume: resumeCommand(outcome) } satisfies RestoreReply };
  }

  async exportSession(query: string, format: string): Promise<Answer<string> & { type: string; filename: string }> {
    const refused = (status: 400 | 404 | 409, body: string) => ({ status, body, type: "text/plain; charset=utf-8", filename: "" });
    if (!(format in TYPES)) return refused(400, "format must be md, html or jsonl\n");
    const found = await this.open(query);
    if ("status" in found) return refused(found.status, "no single session matches\n");
    const sessionId = sessionIdOf(found.dir, found.records);
    const redactor = this.settings.redact ? await rootRedactor(this.fs, this.settings.mirrorDir) : null;
    const body = await exportSession(found, format as ExportFormat, this.settings.prices, redactor);
    const filename = (sessionId === null ? null : nameInside(sessionId, `.${format}`)) ?? `${found.dir}.${format}`;
    return { status: 200, body, type: `${TYPES[format]}; charset=utf-8`, filename };
  }

  async usage(): Promise<UsageView> {
    const now = this.clock();
    const prices = this.settings.prices;
    const sessions = (await this.catalog.reader.loadAll()).map((data) => sessionUsage(data, prices));
    const drill = await lastDrill(this.fs, this.settings.mirrorDir).catch((error: Error) => ({ error: error.message }));
    return { timeZone: offsetLabel(now, LOCAL), today: localDate(now, LOCAL), prices: priceSource(prices), ...usageReport(sessions, prices, LOCAL), drill };
  }

  /** `dir`: a plain name (routes.ts checks); resolves with the bytes its files hold now. */
  async follow(id: number, dir: string): Promise<number> {
    this.follows.set(id, dir);
    this.timer ??= setInterval(() => this.next(() => this.lookAll()).catch((e) => this.tell({ error: (e as Error).message })), this.settings.pollMs);
    (this.timer as { unref?: () => void }).unref?.();
    return await this.next(async () => this.files.has(dir) ? this.bytesOf(dir) : await this.look(dir, false));
  }

  async unfollow(id: number | null): Promise<void> {
    if (id === null) this.follows.clear();
    else this.follows.delete(id);
    const followed = new Set(this.follows.values());
    for (const dir of this.files.keys()) if (!followed.has(dir)) this.files.delete(dir);
    if (this.follows.size > 0) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async open(query: string): Promise<SessionData | Answer & { status: 404 | 409 }> {
    const found = await this.catalog.reader.lookup(query);
    if (found.kind === "none") return { status: 404, body: { error: `no mirrored session matches "${query}"` } };
    if (found.kind === "ambiguous") {
      return { status: 409, body: { error: `"${query}" matches ${found.candidates.length} sessions`, candidates: found.candidates } };
    }
    return found.data;
  }

  private next<T>(work: () => Promise<T>): Promise<T> {
    const done = this.looking.then(work);
    this.looking = done.catch(() => {}); // the caller hears the failure
    return done;
  }

  private async lookAll(): Promise<void> {
    for (const dir of new Set(this.follows.values())) if (this.files.has(dir)) await this.look(dir, true);
  }

  private bytesOf(dir: string): number {
    return [...this.files.get(dir)!.values()].reduce((n, f) => n + f.offset, 0);
  }

  /** Tells what grew in `dir`'s conversations (`emit`), else only sets the followers where the files end. */
  private async look(dir: string, emit: boolean): Promise<number> {
    const followers = this.files.get(dir) ?? this.files.set(dir, new Map()).get(dir)!;
    const batches: Omit<LiveEvent, "bytes">[] = [];
    for (const { path, scope, agent } of (await conversations(this.fs, join(this.settings.mirrorDir, dir))).dirs) {
      const records: Rec[] = [];
      for (const file of await jsonlFiles(this.fs, path)) {
        // A file there when following began is followed from its end; one that appeared since, from its first byte.
        const follower = followers.get(file) ?? followers.set(file, new JsonlFollower(file, emit ? {} : { startAt: (size) => size })).get(file)!;
        await follower.read(this.fs, (line) => {
          const record = line.oversized ? null : jsonObject(decoder.decode(line.bytes));
          if (record !== null) records.push(record);
        });
      }
      if (records.length > 0) batches.push({ dir, scope, agent, records: rendered(records) });
    }
    const bytes = this.bytesOf(dir);
    for (const batch of batches) this.tell({ records: { ...batch, bytes } });
    return bytes;
  }
}

function rendered(records: Rec[]) {
  let previous: Rec | null = null;
  return records.map((r) => {
    const html = renderRecordHtml(r, { continued: continuesMessage(previous, r) });
    previous = r;
    return { uuid: uuidOf(r), parentUuid: typeof r.parentUuid === "string" ? r.parentUuid : null, type: r.type, html };
  });
}
