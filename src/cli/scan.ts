// `sessiontap scan [SESSION…]`: secrets in the mirror and in Claude Code's own transcripts, line by line; it reads only and never prints
// a secret, at most its first four characters (docs/DESIGN.md "Secrets").
import { join } from "node:path/posix";
import { type Config, settingName } from "../config/parse.ts";
import { findSecrets, stringsOf } from "../protocol/secrets.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { JsonlFollower } from "../storage/jsonl-follower.ts";
import { conversations, jsonlFiles, MirrorReader } from "../storage/mirror-reader.ts";
import { matchSession } from "../transcript/records.ts";
import { describe, plural } from "../utils/describe-error.ts";
import { type CommandIo, exitWith, printJson } from "./command-io.ts";

type Target = { sessionId: string; file: string; source: "mirror" | "claude" };
type Finding = { kind: string } & Target & { line: number; preview: string };

/** Bytes read from a file between two lints, so a large transcript is never held whole; more than a line's 16 MiB, so each read moves on. */
const SLICE = 32 * 1024 * 1024;

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const targets = [...(await mirrorFiles(io.fs, config.mirrorDir)), ...(await claudeFiles(io.fs, join(config.claudeDir, "projects")))];
  const say = (source: Target["source"], what: string, root: string, key: "mirrorDir" | "claudeDir") => {
    if (!targets.some((t) => t.source === source)) io.stderr(`sessiontap: scan: no ${what} under ${root} (${settingName(config, key)})\n`);
  };
  say("mirror", "mirror files", config.mirrorDir, "mirrorDir");
  say("claude", "Claude Code transcripts", join(config.claudeDir, "projects"), "claudeDir");
  const ids = [...new Set(targets.map((t) => t.sessionId))].map((id) => ({ dir: id, id }));
  const wanted = new Set<string>();
  for (const query of config.positional) {
    const match = matchSession(ids, query);
    if (match.kind !== "found") {
      const matches = match.kind === "none" ? "matches no session" : `matches ${match.candidates.length} sessions`;
      return exitWith(io, 2, `scan: "${query}" ${matches} in the mirror or Claude Code's transcripts`);
    }
    wanted.add(match.dir);
  }
  const chosen = targets.filter((t) => wanted.size === 0 || wanted.has(t.sessionId));
  const found: Finding[] = [];
  let unread = 0;
  for (const target of chosen) {
    try {
      found.push(...(await scanFile(io.fs, target, (why) => io.stderr(`sessiontap: scan: ${target.file}: ${why}\n`))));
    } catch (error) {
      io.stderr(`sessiontap: scan: cannot read ${target.file}: ${describe(error)}\n`);
      unread++;
    }
  }
  if (config.json) printJson(io, found);
  else for (const f of found) io.stdout(`${f.kind}  ${f.sessionId}  ${f.file}:${f.line}  ${f.preview}\n`);
  io.stderr(`sessiontap: scan: ${plural(found.length, "secret")} found in ${chosen.length} files\n`);
  return found.length > 0 || unread > 0 || chosen.length === 0 ? 1 : 0;
}

async function mirrorFiles(fs: FsAdapter, root: string): Promise<Target[]> {
  const out: Target[] = [];
  for (const sessionId of await new MirrorReader(fs, root).sessionDirs()) {
    for (const { path } of (await conversations(fs, join(root, sessionId))).dirs) {
      for (const file of await jsonlFiles(fs, path)) out.push({ sessionId, file, source: "mirror" });
    }
  }
  return out;
}

/** `projects/<project>/**\/*.jsonl` (subagents' too), links not followed; the session is the name first met below the project. */
async function claudeFiles(fs: FsAdapter, dir: string, project: string | null = null, sessionId: string | null = null): Promise<Target[]> {
  const out: Target[] = [];
  for (const e of (await fs.readdir(dir)).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, e.name);
    const session = sessionId ?? (project === null ? null : e.name.replace(/\.jsonl$/, ""));
    if (e.isDirectory && !e.isSymbolicLink) out.push(...(await claudeFiles(fs, path, project ?? e.name, session)));
    else if (e.isFile && e.name.endsWith(".jsonl") && session !== null) out.push({ sessionId: session, file: path, source: "claude" });
  }
  return out;
}

/** A file's findings, one per secret per line; a line too long to read whole is said, never passed over silently. */
async function scanFile(fs: FsAdapter, target: Target, warn: (why: string) => void): Promise<Finding[]> {
  const follower = new JsonlFollower(target.file);
  const decoder = new TextDecoder();
  const found = new Map<string, Finding>();
  let line = 0;
  for (let atEnd = false; !atEnd;) {
    const texts: string[] = [];
    const lineOf: number[] = [];
    const read = await follower.read(fs, (l) => {
      line++;
      if (l.oversized) return warn(`line ${line} is longer than 16 MiB; not scanned`);
      const text = decoder.decode(l.bytes);
      let strings: string[];
      try {
        strings = stringsOf(JSON.parse(text));
      } catch {
        strings = [text]; // a torn line is text all the same
      }
      for (const s of strings) texts.push(s), lineOf.push(line);
    }, { maxBytes: SLICE, final: true });
    if (read.kind !== "read") throw new Error(read.kind === "missing" ? "it vanished" : "not a regular file");
    atEnd = read.atEnd;
    for (const f of await findSecrets(texts)) {
      found.set(`${lineOf[f.index]} ${f.value}`, { kind: f.kind, ...target, line: lineOf[f.index], preview: `${f.value.slice(0, 4)}…` });
    }
  }
  return [...found.values()];
}
