// Reading the mirror back for people (list, show, export, restore, the viewer): its sessions, each with Claude Code's transcript judged
// (docs/DESIGN.md "One judge of Claude Code's transcript"). Parsed files are cached by size and mtime.
import { join } from "node:path/posix";
import { LRUCache } from "lru-cache";
import { type Parsed, parseJsonl } from "../protocol/json.ts";
import { matchSession, type NamedSession, upgradeOlderRecord } from "../transcript/records.ts";
import { type SessionData, sessionIdOf, type SessionSummary, summarize } from "../transcript/summary.ts";
import { mirrorFacts, type TranscriptState } from "../transcript/transcript-state.ts";
import { buildTree } from "../transcript/tree.ts";
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";
import { type FactsCache, scanTranscripts, type TranscriptInfo, transcriptInfo } from "./claude-projects.ts";
import { type FsAdapter, readIfThere } from "./fs-adapter.ts";
import { jsonlNames } from "./mirror-tree.ts";

/** The one walk of a session directory: main, side, each subagent (real directories only; links named, never followed). */
export async function conversations(fs: FsAdapter, session: string) {
  const dirs: { path: string; scope: "main" | "side" | "subagent"; agent: string | null }[] = [{ path: session, scope: "main", agent: null }];
  const links: string[] = [];
  for (const e of await fs.readdir(session)) {
    if (e.isSymbolicLink) links.push(e.name);
    else if (e.isDirectory && e.name === "side") dirs.push({ path: join(session, "side"), scope: "side", agent: null });
  }
  for (const a of (await fs.readdir(join(session, "subagents"))).sort((x, y) => x.name.localeCompare(y.name))) {
    if (a.isSymbolicLink) links.push(`subagents/${a.name}`);
    else if (a.isDirectory) dirs.push({ path: join(session, "subagents", a.name), scope: "subagent", agent: a.name });
  }
  return { dirs, links };
}

export const jsonlFiles = async (fs: FsAdapter, dir: string) => (await jsonlNames(fs, dir)).map((name) => join(dir, name));

export type Lookup =
  | { kind: "found"; data: SessionData }
  | { kind: "none" }
  | { kind: "ambiguous"; candidates: string[] };

export type OtherConversations = Pick<SessionData, "agents" | "side">;

/** The mirror tree (MirrorReader) or a shared store (src/store/pg-reader.ts). */
export interface SessionSource {
  loadAll(): Promise<SessionData[]>;
  lookup(query: string): Promise<Lookup>;
}

/** By id or directory name, or a unique prefix of either; a safe id is its own directory name, only hashed names need their records read. */
export async function lookupSession(source: { sessionDirs(): Promise<string[]>; load(dir: string): Promise<SessionData> }, query: string): Promise<Lookup> {
  const named: NamedSession[] = [];
  for (const dir of await source.sessionDirs()) {
    named.push({ dir, id: dir === "unknown" || dir.startsWith("inv-") ? sessionIdOf(dir, (await source.load(dir)).records) : dir });
  }
  const match = matchSession(named, query);
  return match.kind === "found" ? { kind: "found", data: await source.load(match.dir) } : match;
}

export class MirrorReader implements SessionSource {
  private cache = new LRUCache<string, { size: number; mtimeMs: number; parsed: Parsed }>({
    maxSize: 64 * 1024 * 1024,
    sizeCalculation: (v) => Math.max(1, v.size),
  });

  constructor(private readonly fs: FsAdapter, readonly root: string) {}

  async sessionDirs(): Promise<string[]> {
    const entries = await this.fs.readdir(this.root);
    return entries.filter((e) => e.isDirectory && !e.isSymbolicLink && !e.name.startsWith(".")).map((e) => e.name).sort();
  }

  async loadAll(): Promise<SessionData[]> {
    const out: { data: SessionData; mtime: number }[] = [];
    for (const dir of await this.sessionDirs()) {
      const { data, mtime } = await this.loadWithTime(dir);
      if (data.files > 0 || data.agents.length > 0 || data.side.length > 0) out.push({ data, mtime });
    }
    return out.sort((a, b) => b.mtime - a.mtime).map((x) => x.data);
  }

  async load(dir: string): Promise<SessionData> {
    return (await this.loadWithTime(dir)).data;
  }

  lookup(query: string): Promise<Lookup> {
    return lookupSession(this, query);
  }

  private async loadWithTime(dir: string): Promise<{ data: SessionData; mtime: number }> {
    const data: SessionData = { dir, records: [], malformed: 0, files: 0, bytes: 0, agents: [], side: [] };
    let mtime = 0;
    for (const conv of (await conversations(this.fs, join(this.root, dir))).dirs) {
      const records: SessionData["records"] = [];
      let [malformed, files] = [0, 0];
      for (const file of await jsonlFiles(this.fs, conv.path)) {
        const info = await this.fs.lstat(file);
        const parsed = info?.isFile ? await this.parse(file, info.size, info.mtimeMs) : null;
        if (info === null || parsed === null) continue;
        files++;
        for (const r of parsed.records) records.push(r);
        malformed += parsed.malformed;
        data.bytes += info.size;
        mtime = Math.max(mtime, info.mtimeMs);
      }
      if (conv.scope === "main") Object.assign(data, { records, malformed, files });
      else if (conv.scope === "side") data.side = records;
      else if (records.length > 0) data.agents.push({ dir: conv.agent!, records });
    }
    return { data, mtime };
  }

  private async parse(file: string, size: number, mtimeMs: number): Promise<Parsed | null> {
    const hit = this.cache.get(file);
    if (hit !== undefined && hit.size === size && hit.mtimeMs === mtimeMs) return hit.parsed;
    const text = await readIfThere(this.fs, file);
    if (text === null) return null;
    const parsed = parseJsonl(text);
    for (const r of parsed.records) upgradeOlderRecord(r);
    this.cache.set(file, { size, mtimeMs, parsed });
    return parsed;
  }
}

/** `drill`'s last outcome for doctor and the viewer's home (a dot name no session can take). */
export const LAST_DRILL = ".last-drill.json";
export type LastDrill = { at: string; drilled: number; passed: number; named: boolean; claudeCode: string | null };

export async function lastDrill(fs: FsAdapter, root: string): Promise<LastDrill | null> {
  const text = await readIfThere(fs, join(root, LAST_DRILL));
  const last = text === null ? null : JSON.parse(text);
  if (typeof last?.at !== "string" || typeof last.drilled !== "number" || typeof last.passed !== "number") return null;
  return {
    at: last.at,
    drilled: last.drilled,
    passed: last.passed,
    named: last.named === true,
    claudeCode: typeof last.claudeCode === "string" ? last.claudeCode : null,
  };
}

export interface ListEntry extends SessionSummary {
  claudeTranscript: TranscriptState;
  claudeTranscriptPath: string | null;
  claudeTranscriptProblem: string | null;
  claudeTranscriptWarning: string | null;
  claudeTranscriptLacking: { prompts: number; answers: number };
}

export class SessionCatalog {
  readonly reader: MirrorReader;
  private readonly transcripts: FactsCache = new Map();

  constructor(
    private readonly fs: FsAdapter,
    readonly mirrorDir: string,
    readonly claudeDir: string,
    private readonly source?: SessionSource,
    readonly prices: PriceTable = BUILTIN_PRICES,
    private readonly clock: () => number = Date.now,
  ) {
    this.reader = new MirrorReader(fs, mirrorDir);
  }

  async judged(): Promise<{ entry: ListEntry; info: TranscriptInfo }[]> {
    const scan = await scanTranscripts(this.fs, this.claudeDir);
    const out = [];
    for (const data of await (this.source ?? this.reader).loadAll()) out.push(await this.judge(data, scan));
    return out.sort((a, b) => (b.entry.lastTimestamp ?? "").localeCompare(a.entry.lastTimestamp ?? ""));
  }

  async list(): Promise<ListEntry[]> {
    return (await this.judged()).map((j) => j.entry);
  }

  async judge(data: SessionData, scan?: Map<string, string[]>): Promise<{ entry: ListEntry; info: TranscriptInfo }> {
    const tree = buildTree(data.records);
    const summary = summarize(data, tree, this.prices);
    const info = await transcriptInfo(this.fs, this.claudeDir, summary, mirrorFacts(tree, [...data.side, ...data.agents.flatMap((a) => a.records)]), {
      scan: scan ?? (await scanTranscripts(this.fs, this.claudeDir)),
      now: this.clock(),
      cache: this.transcripts,
    });
    const entry: ListEntry = {
      ...summary,
      claudeTranscript: info.state,
      claudeTranscriptPath: info.path,
      claudeTranscriptProblem: info.problem,
      claudeTranscriptWarning: info.warning,
      claudeTranscriptLacking: info.verdict.lacking,
    };
    return { entry, info };
  }
}
