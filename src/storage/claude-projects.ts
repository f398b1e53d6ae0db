/**
 * Claude Code's own transcripts, `<claude-dir>/projects/<project>/<session>.jsonl`: where one would be for
 * a working directory, where they are, and whether they look intact (list, show, restore, doctor).
 */
import { transcriptName } from "../protocol/id-name.ts";
import { findProjectDir } from "../transcript/project-dir.ts";
import { classifyTranscript, sessionOfTranscriptName, type TranscriptState } from "../transcript/transcript.ts";
import type { FsAdapter } from "./fs-adapter.ts";
import { join } from "./paths.ts";

/** What is known of one session's Claude Code transcript. */
export interface TranscriptInfo {
  state: TranscriptState;
  /** The file found, or where Claude Code would keep it (null when neither is known). */
  path: string | null;
  /** Why there can be no transcript at all (the id cannot be a Claude Code session's), else null. */
  problem: string | null;
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
  const existing = (await fs.readdir(projects)).filter((e) => e.isDirectory).map((e) => e.name);
  return join(projects, findProjectDir(cwd, existing), name);
}

/** Every transcript under `projects/`, by session id (a session may sit in more than one project). */
export async function scanTranscripts(fs: FsAdapter, claudeDir: string): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  const projects = projectsDir(claudeDir);
  for (const project of await fs.readdir(projects)) {
    if (!project.isDirectory) continue;
    for (const entry of await fs.readdir(join(projects, project.name))) {
      const id = entry.isFile ? sessionOfTranscriptName(entry.name) : null;
      if (id === null) continue;
      const list = found.get(id) ?? [];
      list.push(join(projects, project.name, entry.name));
      found.set(id, list);
    }
  }
  return found;
}

/** A regular file `projects/<dir>/<session>.jsonl` under another project directory than `except`'s, or null. */
export async function findTranscriptElsewhere(fs: FsAdapter, claudeDir: string, sessionId: string, except: string): Promise<string | null> {
  const projects = projectsDir(claudeDir);
  for (const entry of await fs.readdir(projects)) {
    if (!entry.isDirectory) continue;
    const path = join(projects, entry.name, `${sessionId}.jsonl`);
    if (path === except) continue;
    const info = await fs.lstat(path);
    if (info !== null && info.isFile) return path;
  }
  return null;
}

/** Classifications already made, by path, valid while size and mtime stay the same. */
export type TranscriptCache = Map<string, { size: number; mtimeMs: number; state: TranscriptState }>;

/** Reads a transcript file and classifies it; a missing file is "missing". */
export async function readTranscriptState(fs: FsAdapter, path: string, cache?: TranscriptCache): Promise<TranscriptState> {
  const info = await fs.lstat(path);
  if (info === null || info.isDirectory) return "missing";
  if (info.isFile && info.size === 0) return "stub";
  const known = cache?.get(path);
  if (known !== undefined && known.size === info.size && known.mtimeMs === info.mtimeMs) return known.state;
  let state: TranscriptState;
  try {
    state = classifyTranscript(await fs.readText(path));
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return "missing";
    throw error;
  }
  cache?.set(path, { size: info.size, mtimeMs: info.mtimeMs, state });
  return state;
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
  if (sessionId === null) return { state: "missing", path: null, problem: null };
  if (transcriptName(sessionId) === null) return { state: "missing", path: null, problem: UNUSABLE_ID };
  const expected = cwd === null ? null : await transcriptPathFor(fs, claudeDir, cwd, sessionId);
  const candidates = [...new Set([...(expected === null ? [] : [expected]), ...(scan.get(sessionId) ?? [])])];
  let best: TranscriptInfo = { state: "missing", path: expected, problem: null };
  for (const path of candidates) {
    const state = await readTranscriptState(fs, path, cache);
    if (state === "intact") return { state, path, problem: null };
    if (state === "stub" && best.state === "missing") best = { state, path, problem: null };
  }
  return best;
}
