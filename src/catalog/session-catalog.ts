/**
 * The mirrored sessions with their Claude Code transcript state: what `list`, `doctor` and the viewer
 * show. Keeps one MirrorReader, so a long-lived catalog (the viewer's) re-reads only files that changed.
 */
import { buildTree } from "../transcript/tree.ts";
import { type SessionSummary, summarize } from "../transcript/summary.ts";
import type { TranscriptState } from "../transcript/transcript.ts";
import { scanTranscripts, type TranscriptCache, transcriptInfo } from "../storage/claude-projects.ts";
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
}

/** The sessions of one mirror root, seen against one Claude Code config directory. */
export class SessionCatalog {
  readonly reader: MirrorReader;
  /** Claude Code transcripts already classified (a viewer refreshes its list often; transcripts can be large). */
  private readonly transcripts: TranscriptCache = new Map();

  constructor(
    private readonly fs: FsAdapter,
    readonly mirrorDir: string,
    readonly claudeDir: string,
    /** Where the sessions are read from instead of the tree (a shared store). */
    private readonly source?: SessionSource,
    /** The prices costs are estimated with. */
    readonly prices: PriceTable = BUILTIN_PRICES,
  ) {
    this.reader = new MirrorReader(fs, mirrorDir);
  }

  /** Every session, most recently active first. */
  async list(): Promise<ListEntry[]> {
    const scan = await scanTranscripts(this.fs, this.claudeDir);
    const out: ListEntry[] = [];
    for (const data of await (this.source ?? this.reader).loadAll()) {
      const summary = summarize(data, buildTree(data.records), this.prices);
      out.push(await this.withTranscript(summary, scan));
    }
    return out.sort((a, b) => (b.lastTimestamp ?? "").localeCompare(a.lastTimestamp ?? ""));
  }

  /** A summary with its Claude Code transcript state (`scan`: from scanTranscripts, read afresh when omitted). */
  async withTranscript(summary: SessionSummary, scan?: Map<string, string[]>): Promise<ListEntry> {
    const info = await transcriptInfo(
      this.fs,
      this.claudeDir,
      summary.sessionId,
      summary.cwd,
      scan ?? (await scanTranscripts(this.fs, this.claudeDir)),
      this.transcripts,
    );
    return {
      ...summary,
      claudeTranscript: info.state,
      claudeTranscriptPath: info.path,
      claudeTranscriptProblem: info.problem,
      claudeTranscriptWarning: info.warning,
    };
  }
}
