/**
 * Claude Code's own transcripts, `<claude-dir>/projects/<project>/<session>.jsonl`: where one would be for
 * a working directory, where they are, and whether they look intact (list, show, restore, doctor).
 */
import { transcriptName } from "../protocol/session-id.ts";
import { jsonObject } from "../protocol/json.ts";
import { encodeProjectDir, findProjectDir, MAX_PROJECT_DIR } from "../transcript/project-dir.ts";
import { isConversation } from "../transcript/records.ts";
import { sessionOfTranscriptName, type TranscriptState } from "../transcript/transcript.ts";
import { claudeFile, type Line, scanLines } from "./claude-file.ts";
import { describe } from "../utils/describe-error.ts";
import { type FsAdapter, isNotFound } from "./fs-adapter.ts";
import { join } from "./paths.ts";

/** What is known of one session's Claude Code transcript. */
export interface TranscriptInfo {
  state: TranscriptState;
  /** The file found, or where Claude Code would keep it (null when neither is known). */
  path: string | null;
  /** Why there can be no transcript at all (the id cannot be a Claude Code session's), else null. */
  problem: string | null;
  /** Why what is at `path` was not read (a symlink, a FIFO, unreadable): that session's warning, else null. */
  warning: string | null;
}

/** Why a session id has no transcript path: Claude Code names its files after ids it makes itself. */
export const UNUSABLE_ID = "the session id cannot be a Claude Code session's (not a plain file name)";

/** An id that cannot name a file in Claude Code's tree: nothing is read or written for it. */
export class UnusableIdError extends Error {
  override name = "UnusableIdError";
  readonly code = "EBADID";
}

/** Claude Code's projects directory. */
export function projectsDir(claudeDir: string): string {
  return join(claudeDir, "projects");
}

/**
 * The transcript path Claude Code uses for `sessionId` in `cwd` (honouring an existing long-name variant);
 * throws UnusableIdError for an id that cannot be one file name there (it would climb out, or be too long).
 */
export async function transcriptPathFor(fs: FsAdapter, claudeDir: string, cwd: string, sessionId: string): Promise<string> {
  const name = transcriptName(sessionId);
  if (name === null) throw new UnusableIdError(UNUSABLE_ID);
  const projects = projectsDir(claudeDir);
  // Only a name too long to be the directory itself needs the listing (100,000 project directories cost
  // a readdir of them all per session otherwise: docs/GUARD.md "Reading without cost").
  if (!needsListing(cwd)) return join(projects, encodeProjectDir(cwd), name);
  const existing = (await fs.readdir(projects)).filter((e) => e.isDirectory).map((e) => e.name);
  return join(projects, findProjectDir(cwd, existing), name);
}

/** True when Claude Code may have named `cwd`'s project directory after a shorter form of it (see findProjectDir). */
function needsListing(cwd: string): boolean {
  return encodeProjectDir(cwd).length > MAX_PROJECT_DIR;
}

/**
 * Every transcript under `projects/`, by session id (a session may sit in more than one project). A project
 * directory that cannot be listed is passed over: one odd directory never costs the whole listing.
 */
export async function scanTranscripts(fs: FsAdapter, claudeDir: string): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  const projects = projectsDir(claudeDir);
  for (const project of await fs.readdir(projects)) {
    if (!project.isDirectory) continue;
    const entries = await fs.readdir(join(projects, project.name)).catch(() => []);
    for (const entry of entries) {
      const id = entry.isFile ? sessionOfTranscriptName(entry.name) : null;
      if (id === null) continue;
      const list = found.get(id) ?? [];
      list.push(join(projects, project.name, entry.name));
      found.set(id, list);
    }
  }
  return found;
}

/**
 * The project directories under `projects/`, listed again only when that directory changed (its inode or
 * mtime: a directory added or removed), each with the generation of the listing that first held it, so a
 * search can look only in the directories that are new since its last (docs/GUARD.md "Reading without cost").
 */
export class ProjectDirectories {
  private names: { name: string; generation: number }[] = [];
  private generation = 0;
  private listed: { ino: number; mtimeMs: number } | null = null;

  constructor(private readonly claudeDir: string) {}

  /** The current generation (a search up to it has seen every directory there is). */
  get current(): number {
    return this.generation;
  }

  /** A refresh in flight: the searches that start meanwhile share it. */
  private refreshing: Promise<void> | null = null;

  /** Brings the listing up to date, once for every search that asks at the same time. */
  private refresh(fs: FsAdapter): Promise<void> {
    this.refreshing ??= this.relist(fs).finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  /** A readdir of `projects/`, only when it changed since the last one. */
  private async relist(fs: FsAdapter): Promise<void> {
    const projects = projectsDir(this.claudeDir);
    const info = await fs.lstat(projects);
    if (info === null || !info.isDirectory) {
      this.names = [];
      this.listed = null;
      return;
    }
    if (this.listed !== null && this.listed.ino === info.ino && this.listed.mtimeMs === info.mtimeMs) return;
    const known = new Map(this.names.map((n) => [n.name, n.generation]));
    const next = ++this.generation;
    this.names = (await fs.readdir(projects)).filter((e) => e.isDirectory).map((e) => ({ name: e.name, generation: known.get(e.name) ?? next }));
    this.listed = { ino: info.ino, mtimeMs: info.mtimeMs };
  }

  /**
   * A regular file `projects/<dir>/<session>.jsonl` under a directory other than `except`'s, looking only
   * in directories new since generation `since` (0: all of them); and the generation searched up to.
   */
  async find(fs: FsAdapter, sessionId: string, except: string, since: number): Promise<{ path: string | null; upTo: number }> {
    await this.refresh(fs);
    const projects = projectsDir(this.claudeDir);
    for (const entry of this.names) {
      if (entry.generation <= since) continue;
      const path = join(projects, entry.name, `${sessionId}.jsonl`);
      if (path === except) continue;
      const info = await fs.lstat(path);
      if (info !== null && info.isFile) return { path, upTo: this.generation };
    }
    return { path: null, upTo: this.generation };
  }
}

/** Classifications already made, by path, valid while size and mtime stay the same. */
export type TranscriptCache = Map<string, { size: number; mtimeMs: number; state: TranscriptState }>;

/** What is known of one transcript file: its state, and why it was not read when it was not. */
export interface TranscriptRead {
  state: TranscriptState;
  warning: string | null;
}

const decoder = new TextDecoder();

/** The record of a whole line, or null (torn, foreign, or too long to hold). */
function recordOf(line: Line): Record<string, unknown> | null {
  return line.oversized ? null : jsonObject(decoder.decode(line.bytes));
}

/** True for a user or assistant record; a line too long to hold is judged by its first bytes, as the guard does. */
export function conversationLine(line: Line): boolean {
  if (line.oversized) return /"type":"(user|assistant)"/.test(decoder.decode(line.head));
  const record = recordOf(line);
  return record !== null && isConversation(record);
}

/** True when the file's last line is unfinished or not a JSON object (a record cut off mid-write). */
function tornEnd(end: { endsWithNewline: boolean; lastLine: Line | null }): boolean {
  if (end.lastLine === null) return false;
  if (!end.endsWithNewline) return true;
  return !end.lastLine.oversized && recordOf(end.lastLine) === null;
}

/** A read failure as that file's warning (a file gone meanwhile is simply missing). */
function failed(path: string, error: unknown): TranscriptRead {
  if (isNotFound(error)) return { state: "missing", warning: null };
  return { state: "missing", warning: `${path} could not be read (${describe(error)})` };
}

/**
 * Classifies a transcript file (docs/RELIABILITY.md "Trust boundaries"): missing, a stub, or intact once
 * one user or assistant record is found — read up to that record, with bounded memory, a regular file
 * only. What is not one (a symlink, a FIFO, a device, a directory) or cannot be read is "missing" with a
 * warning, and never throws: a bad file costs its own row, never the listing.
 */
export async function readTranscriptState(fs: FsAdapter, path: string, cache?: TranscriptCache): Promise<TranscriptRead> {
  try {
    const file = await claudeFile(fs, path);
    if (file.kind === "missing") return { state: "missing", warning: null };
    if (file.kind === "refused") return { state: "missing", warning: `${path} is ${file.why}` };
    if (file.size === 0) return { state: "stub", warning: null };
    const known = cache?.get(path);
    if (known !== undefined && known.size === file.size && known.mtimeMs === file.mtimeMs) return { state: known.state, warning: null };
    const end = await scanLines(fs, path, file.size, conversationLine);
    const state: TranscriptState = end.stopped ? "intact" : "stub";
    cache?.set(path, { size: file.size, mtimeMs: file.mtimeMs, state });
    return { state, warning: null };
  } catch (error) {
    return failed(path, error);
  }
}

/** What restore must know of a transcript it may replace: its state, its user and assistant records, a torn end. */
export interface TranscriptFacts extends TranscriptRead {
  conversation: number;
  torn: boolean;
}

/** Reads a whole transcript file with bounded memory for its facts (see readTranscriptState; never throws). */
export async function readTranscriptFacts(fs: FsAdapter, path: string): Promise<TranscriptFacts> {
  try {
    const file = await claudeFile(fs, path);
    if (file.kind === "missing") return { state: "missing", warning: null, conversation: 0, torn: false };
    if (file.kind === "refused") return { state: "missing", warning: `${path} is ${file.why}`, conversation: 0, torn: false };
    let conversation = 0;
    const end = await scanLines(fs, path, file.size, (line) => void (conversationLine(line) && conversation++));
    return { state: conversation > 0 ? "intact" : "stub", warning: null, conversation, torn: tornEnd(end) };
  } catch (error) {
    return { ...failed(path, error), conversation: 0, torn: false };
  }
}

/** Scans a transcript's lines with bounded memory (see claude-file.ts); throws when it is not a regular file or cannot be read. */
export async function scanTranscript(fs: FsAdapter, path: string, visit: (line: Line) => void): Promise<{ torn: boolean }> {
  const file = await claudeFile(fs, path);
  if (file.kind === "missing") throw Object.assign(new Error(`${path} is gone`), { code: "ENOENT" });
  if (file.kind === "refused") throw new Error(`${path} is ${file.why}`);
  return { torn: tornEnd(await scanLines(fs, path, file.size, visit)) };
}

/**
 * The state of a session's Claude Code transcript: the file where its working directory puts it, else any
 * file of that session elsewhere under `projects/` (the best of them: intact over stub).
 */
export async function transcriptInfo(
  fs: FsAdapter,
  claudeDir: string,
  sessionId: string | null,
  cwd: string | null,
  scan: Map<string, string[]>,
  cache?: TranscriptCache,
): Promise<TranscriptInfo> {
  if (sessionId === null) return { state: "missing", path: null, problem: null, warning: null };
  if (transcriptName(sessionId) === null) return { state: "missing", path: null, problem: UNUSABLE_ID, warning: null };
  const expected = cwd === null ? null : await transcriptPathFor(fs, claudeDir, cwd, sessionId);
  const candidates = [...new Set([...(expected === null ? [] : [expected]), ...(scan.get(sessionId) ?? [])])];
  let best: TranscriptInfo = { state: "missing", path: expected, problem: null, warning: null };
  for (const path of candidates) {
    const { state, warning } = await readTranscriptState(fs, path, cache);
    if (state === "intact") return { state, path, problem: null, warning: null };
    if (state === "stub" && best.state === "missing") best = { state, path, problem: null, warning: null };
    else if (warning !== null && best.state === "missing" && best.warning === null) best = { state, path, problem: null, warning };
  }
  return best;
}
