// Claude Code's own transcripts, `<claude-dir>/projects/<project>/<session>.jsonl`: where they are, and how each stands against the
// mirror as the one judge says (docs/DESIGN.md "One judge of Claude Code's transcript").
import { dirname, join } from "node:path/posix";
import { transcriptName } from "../protocol/session-id.ts";
import { type FileFacts, judge, type MirrorFacts, newFileFacts, noteLine, type TranscriptState, type Verdict } from "../transcript/transcript-state.ts";
import { describe } from "../utils/describe-error.ts";
import { type EntryInfo, type FsAdapter, isNotFound, sameFile } from "./fs-adapter.ts";
import { JsonlFollower } from "./jsonl-follower.ts";

export interface TranscriptInfo {
  state: TranscriptState;
  path: string | null;
  /** Why there can be no transcript at all (the id cannot be a Claude Code session's), else null. */
  problem: string | null;
  /** Why what is at `path` was not read (a symlink, a FIFO, unreadable), else null. */
  warning: string | null;
  verdict: Verdict;
  facts: FileFacts | null;
}

const UNUSABLE_ID = "the session id cannot be a Claude Code session's (not a plain file name)";

// The project directory as Claude Code 2.1.328 names it (`strings … | grep 'MTe=200'`): each UTF-16 unit outside [A-Za-z0-9] a "-";
// past 200, cut and suffixed with a hash of the path.
export const MAX_PROJECT_DIR = 200;

/** Java's String.hashCode, a signed 32-bit integer. */
export function javaHash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = ((h << 5) - h + text.charCodeAt(i)) | 0;
  return h;
}

export function encodeProjectDir(cwd: string): string {
  const name = cwd.replace(/[^a-zA-Z0-9]/g, "-");
  return name.length <= MAX_PROJECT_DIR ? name : `${name.slice(0, MAX_PROJECT_DIR)}-${Math.abs(javaHash(cwd)).toString(36)}`;
}

/** The exact encoding, or for a long path the one existing directory sharing its 200-character prefix (another release hashed it differently). */
export function findProjectDir(cwd: string, existing: readonly string[]): string {
  const exact = encodeProjectDir(cwd);
  if (exact.length <= MAX_PROJECT_DIR || existing.includes(exact)) return exact;
  const similar = existing.filter((n) => n.startsWith(exact.slice(0, MAX_PROJECT_DIR + 1)));
  return similar.length === 1 ? similar[0] : exact;
}

/** Throws for an id that cannot be one file name there; only a name too long to be a directory itself needs the listing. */
export async function transcriptPathFor(fs: FsAdapter, claudeDir: string, cwd: string, sessionId: string): Promise<string> {
  const name = transcriptName(sessionId);
  if (name === null) throw new Error(UNUSABLE_ID);
  const projects = join(claudeDir, "projects");
  if (encodeProjectDir(cwd).length <= MAX_PROJECT_DIR) return join(projects, encodeProjectDir(cwd), name);
  const existing = (await fs.readdir(projects)).filter((e) => e.isDirectory).map((e) => e.name);
  return join(projects, findProjectDir(cwd, existing), name);
}

/** Every transcript under `projects/`, by session id; a project directory that cannot be listed is passed over. */
export async function scanTranscripts(fs: FsAdapter, claudeDir: string): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  for (const project of await fs.readdir(join(claudeDir, "projects"))) {
    if (!project.isDirectory) continue;
    for (const entry of await fs.readdir(join(claudeDir, "projects", project.name)).catch(() => [])) {
      if (!entry.isFile || !entry.name.endsWith(".jsonl") || entry.name.length <= 6) continue;
      const id = entry.name.slice(0, -6);
      found.set(id, [...(found.get(id) ?? []), join(claudeDir, "projects", project.name, entry.name)]);
    }
  }
  return found;
}

/** The project directories, listed again only when `projects/` changed, each with the listing that first held it (docs/GUARD.md "Reading without cost"). */
export class ProjectDirectories {
  private names: { name: string; generation: number }[] = [];
  private generation = 0;
  private listed: EntryInfo | null = null;
  private refreshing: Promise<void> | null = null;

  constructor(private readonly claudeDir: string) {}

  private async relist(fs: FsAdapter): Promise<void> {
    const info = await fs.lstat(join(this.claudeDir, "projects"));
    if (info === null || !info.isDirectory) return void ((this.names = []), (this.listed = null));
    if (this.listed !== null && sameFile(this.listed, info, true)) return;
    const known = new Map(this.names.map((n) => [n.name, n.generation]));
    const next = ++this.generation;
    const entries = await fs.readdir(join(this.claudeDir, "projects"));
    this.names = entries.filter((e) => e.isDirectory).map((e) => ({ name: e.name, generation: known.get(e.name) ?? next }));
    this.listed = info;
  }

  /** A regular file `<dir>/<session>.jsonl` other than `except`, in directories newer than generation `since`; and the generation searched up to. */
  async find(fs: FsAdapter, sessionId: string, except: string, since: number): Promise<{ path: string | null; upTo: number }> {
    await (this.refreshing ??= this.relist(fs).finally(() => (this.refreshing = null)));
    for (const entry of this.names) {
      const path = join(this.claudeDir, "projects", entry.name, `${sessionId}.jsonl`);
      if (entry.generation <= since || path === except) continue;
      if ((await fs.lstat(path))?.isFile === true) return { path, upTo: this.generation };
    }
    return { path: null, upTo: this.generation };
  }
}

/** Why a Claude Code file is not read (its directory or itself a link, a FIFO…), "missing", or null to read it. */
async function refusal(fs: FsAdapter, path: string): Promise<string | null> {
  const dir = dirname(path);
  const parent = await fs.lstat(dir);
  if (parent?.isSymbolicLink) return `its directory ${dir} is a symbolic link; not followed`;
  const info = parent?.isDirectory ? await fs.lstat(path) : null;
  if (info === null) return "missing";
  if (info.isSymbolicLink) return "a symbolic link; not followed";
  if (info.isDirectory) return "a directory";
  return info.isFile ? null : "not a regular file (a FIFO, a device or a socket); not read";
}

export type FactsCache = Map<string, { follower: JsonlFollower; facts: FileFacts }>;

/** Bounded memory, a regular file only (docs/RELIABILITY.md "Trust boundaries"); what cannot be read is a warning, never thrown. */
export async function readFileFacts(fs: FsAdapter, path: string, cache?: FactsCache): Promise<{ facts: FileFacts | null; warning: string | null }> {
  try {
    const why = await refusal(fs, path);
    if (why !== null) return { facts: null, warning: why === "missing" ? null : `${path} is ${why}` };
    const known = cache?.get(path) ?? { follower: new JsonlFollower(path), facts: newFileFacts() };
    const read = await known.follower.read(fs, (l) => noteLine(known.facts, l.bytes, l.oversized, l.last), {
      final: true,
      onRestart: () => (known.facts = newFileFacts()),
    });
    if (read.kind !== "read") return { facts: null, warning: null };
    cache?.set(path, known);
    return { facts: known.facts, warning: null };
  } catch (error) {
    return { facts: null, warning: isNotFound(error) ? null : `${path} could not be read (${describe(error)})` };
  }
}

const RANK: Record<TranscriptState, number> = { missing: 0, stub: 1, behind: 2, intact: 3 };

/** A session's transcript judged: the file its working directory puts it in, else the best file of that session elsewhere (`scan`). */
export async function transcriptInfo(
  fs: FsAdapter,
  claudeDir: string,
  session: { sessionId: string | null; cwd: string | null },
  mirror: MirrorFacts,
  o: { scan: Map<string, string[]>; now: number; cache?: FactsCache },
): Promise<TranscriptInfo> {
  const none = { state: "missing" as const, path: null, problem: null, warning: null, verdict: judge(null, mirror), facts: null };
  const id = session.sessionId;
  if (id === null) return none;
  if (transcriptName(id) === null) return { ...none, problem: UNUSABLE_ID };
  const expected = session.cwd === null ? null : await transcriptPathFor(fs, claudeDir, session.cwd, id);
  let best: TranscriptInfo = { ...none, path: expected };
  for (const path of new Set([...(expected === null ? [] : [expected]), ...(o.scan.get(id) ?? [])])) {
    const { facts, warning } = await readFileFacts(fs, path, o.cache);
    const verdict = judge(facts, mirror, { now: o.now });
    if (RANK[verdict.state] > RANK[best.state]) best = { state: verdict.state, path, problem: null, warning: null, verdict, facts };
    else if (warning !== null && best.state === "missing" && best.warning === null) best = { ...best, path, warning };
  }
  return best;
}
