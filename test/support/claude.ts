// Runs the real Claude Code CLI (a pinned dev dependency: 2.1.328 by default, the newest pinned release with
// `bin: CLAUDE_NEXT_BIN`) in print mode against a base URL, in a scratch HOME and project directory, and
// reads the transcript it writes. node:child_process only, so it behaves the same under Bun and Deno.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { readTree } from "./tap.ts";

const MODULES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "node_modules");

/**
 * Absolute path of the pinned Claude Code CLI, 2.1.328 (`@anthropic-ai/claude-code`). Named by its package,
 * not `node_modules/.bin/claude`: both pinned versions declare that bin, and which one npm links there is
 * not ours to choose.
 */
export const CLAUDE_BIN = join(MODULES, "@anthropic-ai", "claude-code", "bin", "claude.exe");

/** Absolute path of the newest pinned Claude Code CLI, 2.1.332 (the `claude-code-next` npm alias). */
export const CLAUDE_NEXT_BIN = join(MODULES, "claude-code-next", "bin", "claude.exe");

/** The API key every e2e run hands the CLI (any value works against the stub). */
export const TEST_API_KEY = "sk-test-sessiontap-e2e-0000";

/** Scratch directories for one test, all under one mkdtemp directory. */
export interface Scratch {
  home: string;
  /** The project directory (realpath'd: the path Claude Code reports as its working directory). */
  project: string;
  /** TMPDIR for the CLI (it keeps per-project task and probe directories there). */
  tmp: string;
  /** Removes all of it. */
  cleanup(): void;
}

/** Creates a scratch HOME, project directory and TMPDIR under one fresh directory in the OS temp dir. */
export function makeScratch(): Scratch {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sessiontap-e2e-")));
  const [home, project, tmp] = ["home", "proj", "tmp"].map((name) => join(root, name));
  for (const dir of [home, project, tmp]) mkdirSync(dir);
  return { home, project, tmp, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/** How one CLI run ended. */
export interface ClaudeRun {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  ms: number;
}

/**
 * A proxy address on loopback where nothing listens: every request Claude Code makes to a host other than
 * the tap (telemetry, feature flags, update checks) is sent there and refused at once, so no test ever
 * sends traffic off this machine, whatever the CLI's own defaults are.
 */
export const NOWHERE_PROXY = "http://127.0.0.1:9";

/** The environment for a run: the inherited one less every ANTHROPIC_ and CLAUDE prefixed variable (and proxies), plus the run's own. */
export function claudeEnv(baseUrl: string, scratch: Scratch): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(ANTHROPIC_|CLAUDE_|CLAUDECODE)/.test(k) && !/^(https?|all|no)_proxy$/i.test(k)) env[k] = v;
  }
  return {
    ...env,
    HOME: scratch.home,
    TMPDIR: scratch.tmp,
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: TEST_API_KEY,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    HTTPS_PROXY: NOWHERE_PROXY,
    HTTP_PROXY: NOWHERE_PROXY,
    NO_PROXY: "127.0.0.1,localhost,::1",
  };
}

/** `env` with `changes` made: a value set, null removed. */
function withChanges(env: Record<string, string>, changes: Record<string, string | null>): Record<string, string> {
  const out = { ...env };
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * Runs `claude <args>` with cwd `scratch.project`; a run longer than `timeoutMs` is killed (timedOut: true).
 * `bin` picks the CLI (CLAUDE_BIN, 2.1.328, unless told otherwise); `env` changes the run's environment
 * (null removes a variable: proxy mode runs with no ANTHROPIC_BASE_URL).
 */
export function runClaude(
  args: string[],
  opts: { baseUrl: string; scratch: Scratch; timeoutMs?: number; bin?: string; env?: Record<string, string | null> },
): Promise<ClaudeRun> {
  const started = Date.now();
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = spawn(opts.bin ?? CLAUDE_BIN, args, {
      cwd: opts.scratch.project,
      env: withChanges(claudeEnv(opts.baseUrl, opts.scratch), opts.env ?? {}),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout!.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("error", (e) => (clearTimeout(timer), reject(e)));
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut, ms: Date.now() - started });
    });
  });
}

/** One-line summary of a run for assertion messages. */
export function describeRun(run: ClaudeRun): string {
  return `exit ${run.code} signal ${run.signal} timedOut ${run.timedOut} after ${run.ms} ms; stdout ${JSON.stringify(run.stdout.slice(0, 500))}; stderr ${
    JSON.stringify(run.stderr.slice(0, 1500))
  }`;
}

/** Claude Code's project directory name for `cwd`: every character outside [A-Za-z0-9] becomes '-'. */
export function encodeProjectDir(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

/** Every transcript file Claude Code wrote under `$HOME/.claude/projects/<dir>/<session>.jsonl`. */
export function findTranscripts(home: string): string[] {
  const root = join(home, ".claude", "projects");
  if (!existsSync(root)) return [];
  const out: string[] = [];
  for (const dir of readdirSync(root).sort()) {
    let names: string[];
    try {
      names = readdirSync(join(root, dir));
    } catch {
      continue;
    }
    for (const name of names.sort()) if (name.endsWith(".jsonl")) out.push(join(root, dir, name));
  }
  return out;
}

/** A JSON record of a transcript or mirror file: any shape, as the tests probe what was written. */
// deno-lint-ignore no-explicit-any
export type Rec = Record<string, any>;

/** Parses a JSONL file into its records (blank lines skipped). */
export function readJsonl(path: string): Rec[] {
  return readFileSync(path, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
}

/** Key-set snapshot of a transcript: per record type, the distinct sorted key sets of records and of their message objects. */
export interface KeySnapshot {
  user: { record: string[][]; message: string[][] };
  assistant: { record: string[][]; message: string[][] };
}

/** The distinct sorted key sets of `objects`, sorted (stable text order). */
function distinctKeySets(objects: Rec[]): string[][] {
  const seen = new Map<string, string[]>();
  for (const o of objects) {
    const keys = Object.keys(o).sort();
    seen.set(JSON.stringify(keys), keys);
  }
  return [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, k]) => k);
}

/** Builds the key-set snapshot of a transcript's user and assistant records. */
export function keySnapshot(records: Rec[]): KeySnapshot {
  const of = (type: string) => {
    const recs = records.filter((r) => r.type === type);
    return { record: distinctKeySets(recs), message: distinctKeySets(recs.map((r) => r.message ?? {})) };
  };
  return { user: of("user"), assistant: of("assistant") };
}

/** Every key that appears in any of `sets`. */
export function unionOf(sets: string[][]): Set<string> {
  return new Set(sets.flat());
}

/** Records of a session's main-conversation mirror files (`<root>/<sessionId>/*.jsonl`), in file order. */
export function sessionMirror(root: string, sessionId: string): Rec[] {
  return [...readTree(root).entries()]
    .filter(([path]) => /^[^/]+\/[^/]+\.jsonl$/.test(path) && path.startsWith(`${sessionId}/`))
    .flatMap(([, records]) => records);
}

/** Bounded polling, for files another process writes. */
export { pollUntil } from "./poll.ts";
