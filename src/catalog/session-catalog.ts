/**
 * The mirrored sessions with their Claude Code transcript state: what `list`, `doctor` and the viewer
 * show. Keeps one MirrorReader, so a long-lived catalog (the viewer's) re-reads only files that changed.
 */
import { buildTree } from "../transcript/tree.ts";
import { type SessionData, type SessionSummary, summarize } from "../transcript/summary.ts";
import { mirrorFacts, type TranscriptState } from "../transcript/transcript-state.ts";
import { type FactsCache, scanTranscripts, type TranscriptInfo, transcriptInfo } from "../storage/claude-projects.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { MirrorReader, type SessionSource } from "../storage/mirror-reader.ts";
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";

/** A session as `list --json` prints it (docs/DESIGN.md "Command line"). */
export interface ListEntry extends SessionSummary {
  claudeTranscript: TranscriptState;
  claudeTranscriptPath: string | null;
  /** Why Claude Code can have no transcript of this session (an id it could not have made), else null. */
  claudeTranscriptProblem: string | null;
  /** Why what stands where its transcript would be was not read (a symlink, a FIFO, unreadable), else null. */
  claudeTranscriptWarning: string | null;
  /** The prompts and answers of the mirror's current branch that Claude Code's transcript lacks. */
  claudeTranscriptLacking: { prompts: number; answers: number };
}

/** The sessions of one mirror root, seen against one Claude Code config directory. */
export class SessionCatalog {
  readonly reader: MirrorReader;
  /** Claude Code transcripts already read (a viewer refreshes its list often; transcripts can be large). */
  private readonly transcripts: FactsCache = new Map();

  constructor(
    private readonly fs: FsAdapter,
    readonly mirrorDir: string,
    readonly claudeDir: string,
    /** Where the sessions are read from instead of the tree (a shared store). */
    private readonly source?: SessionSource,
    /** The prices costs are estimated with. */
    readonly prices: PriceTable = BUILTIN_PRICES,
    private readonly clock: () => number = Date.now,
  ) {
    this.reader = new MirrorReader(fs, mirrorDir);
  }

  /** Every session with its transcript judged, most recently active first. */
  async judged(): Promise<{ entry: ListEntry; info: TranscriptInfo }[]> {
    const scan = await scanTranscripts(this.fs, this.claudeDir);
    const out = [];
    for (const data of await (this.source ?? this.reader).loadAll()) out.push(await this.judge(data, scan));
    return out.sort((a, b) => (b.entry.lastTimestamp ?? "").localeCompare(a.entry.lastTimestamp ?? ""));
  }

  /** Every session, most recently active first. */
  async list(): Promise<ListEntry[]> {
    return (await this.judged()).map((j) => j.entry);
  }

  /** One session's entry (`scan`: from scanTranscripts, read afresh when omitted). */
  async judge(data: SessionData, scan?: Map<string, string[]>): Promise<{ entry: ListEntry; info: TranscriptInfo }> {
    const tree = buildTree(data.records);
    const summary = summarize(data, tree, this.prices);
    const info = await transcriptInfo(this.fs, this.claudeDir, summary, mirrorFacts(tree, [...data.side, ...data.agents.flatMap((a) => a.records)]), {
      scan: scan ?? (await scanTranscripts(this.fs, this.claudeDir)),
      now: this.clock(),
      cache: this.transcripts,
    });
    return { entry: entryOf(summary, info), info };
  }
}

/** A summary with its transcript's state. */
export function entryOf(summary: SessionSummary, info: TranscriptInfo): ListEntry {
  return {
    ...summary,
    claudeTranscript: info.state,
    claudeTranscriptPath: info.path,
    claudeTranscriptProblem: info.problem,
    claudeTranscriptWarning: info.warning,
    claudeTranscriptLacking: info.verdict.lacking,
  };
}
