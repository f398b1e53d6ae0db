// One session of `sessiontap drill` (docs/DESIGN.md "Drill"): written as `restore` writes it into a scratch Claude Code
// config, resumed there by the user's Claude Code against a loopback answerer, and what it sent compared with the mirror.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import process from "node:process";
import { restoreSession } from "../restore/restore-session.ts";
import { listen } from "../runtime/index.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { join } from "../storage/paths.ts";
import { checkTrusted } from "../storage/trusted-path.ts";
import { compareResume } from "../transcript/restore-plan.ts";
import { resumedBranch, type Tree } from "../transcript/tree.ts";
import type { Rec } from "../transcript/records.ts";
import type { SessionData, SessionSummary } from "../transcript/summary.ts";
import { describe } from "../utils/describe-error.ts";

export const PROBE = "sessiontap drill: this resume is a check; reply with OK";

export interface DrillResult {
  sessionId: string;
  ok: boolean;
  detail: string;
  title: string | null;
  turns: number;
  /** Claude Code said it has no such conversation ("No conversation found…"): it refused the resume outright. */
  refused: boolean;
  /** The session's directory, where Claude Code ran unless it is gone: then in a scratch one (`scratchCwd`). */
  cwd: string | null;
  scratchCwd: boolean;
  compactedFirst: boolean;
  /** The Claude Code version its requests named, when it sent one. */
  claudeCode: string | null;
  ms: number;
}

/** What a drill runs with; `program` is Claude Code as the launcher finds it: SESSIONTAP_CLAUDE, else `claude` on PATH. */
type DrillSetup = {
  fs: FsAdapter;
  program: string;
  env: Record<string, string | undefined>;
  timeoutMs: number;
  clock: () => number;
  warn: (line: string) => void;
  /** Aborted by SIGINT or SIGTERM: the running Claude Code is killed, with what it started. */
  stop: AbortSignal;
};

/** Claude Code could not be started at all: no session can be drilled. */
export class ClaudeNotStarted extends Error {}

const MESSAGE = { id: "msg_sessiontap_drill", type: "message", role: "assistant", stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };

/** A streamed answer as short as Claude Code accepts: one text block, with the `event:` lines it needs. */
function streamed(model: unknown): string {
  return ([
    ["message_start", { message: { ...MESSAGE, model, content: [], stop_reason: null } }],
    ["content_block_start", { index: 0, content_block: { type: "text", text: "" } }],
    ["content_block_delta", { index: 0, delta: { type: "text_delta", text: "OK" } }],
    ["content_block_stop", { index: 0 }],
    ["message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 1 } }],
    ["message_stop", {}],
  ] as const).map(([type, data]) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`).join("");
}

/**
 * The loopback answerer: keeps the first conversation request, answers every request with a minimal valid reply, never an error to
 * retry. Only a request with this run's key is Claude Code's: another local user's on the port is answered as a route that is not there.
 */
async function startAnswerer(key: string, warn: (line: string) => void) {
  const seen = { first: null as Rec | null, userAgent: null as string | null };
  const server = await listen(async (request) => {
    const path = request.headers.get("x-api-key") === key ? new URL(request.url).pathname : "";
    const text = request.method === "POST" ? await request.text() : "";
    let body: Rec | null = null;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: answered below as a route that does not exist
    }
    if (path === "/v1/messages/count_tokens") return Response.json({ input_tokens: Math.ceil(text.length / 4) });
    if (path !== "/v1/messages" || body === null || typeof body !== "object") {
      return Response.json({ type: "error", error: { type: "not_found_error", message: `sessiontap drill: nothing at ${path}` } }, { status: 404 });
    }
    seen.first ??= body;
    seen.userAgent ??= request.headers.get("user-agent");
    if (body.stream === true) return new Response(streamed(body.model), { headers: { "content-type": "text/event-stream" } });
    const content = [{ type: "text", text: "OK" }];
    return Response.json({ ...MESSAGE, model: body.model, content, stop_reason: "end_turn" });
  }, { port: 0, hostname: "127.0.0.1", onError: (error) => warn(`sessiontap: drill's answerer: ${describe(error)}`), cut: new AbortController() });
  return { url: `http://127.0.0.1:${server.port}`, seen, stop: () => server.stop(1000) };
}

/** Runs Claude Code in a process group of its own; at its exit or the timeout the whole group is killed, so nothing it started lives on. */
function runClaude(program: string, args: string[], cwd: string, env: Record<string, string>, timeoutMs: number, stop: AbortSignal) {
  return new Promise<{ code: number | null; out: string; timedOut: boolean }>((resolve, reject) => {
    const group = process.platform !== "win32";
    const child = spawn(program, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: group });
    let out = "";
    let timedOut = false;
    const keep = (chunk: Uint8Array) => void (out.length < 65536 && (out += new TextDecoder().decode(chunk)));
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    const kill = () => {
      try {
        if (group) process.kill(-child.pid!, "SIGKILL");
        else child.kill("SIGKILL");
      } catch {
        // the group is gone already
      }
    };
    const timer = setTimeout(() => (timedOut = true, kill()), timeoutMs);
    const done = () => (clearTimeout(timer), stop.removeEventListener("abort", kill));
    stop.addEventListener("abort", kill);
    child.once("error", (error) => (done(), reject(error)));
    child.once("exit", kill);
    child.once("close", (code) => (done(), resolve({ code, out, timedOut })));
  });
}

/** Removes the scratch tree, never following a link out of it. */
async function removeTree(fs: FsAdapter, path: string): Promise<void> {
  const info = await fs.lstat(path);
  if (info?.isDirectory) {
    for (const entry of await fs.readdir(path)) await removeTree(fs, join(path, entry.name));
    await fs.rmdir(path);
  } else if (info !== null) await fs.unlink(path);
}

/** The user's environment less every credential, provider switch and proxy of Claude Code's, with the scratch config and the answerer. */
function childEnv(env: Record<string, string | undefined>, home: string, url: string, key: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && !/^(ANTHROPIC_|CLAUDE_|CLAUDECODE)/.test(k) && !/^(https?|all|no)_proxy$/i.test(k)) out[k] = v;
  }
  return {
    ...out,
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, ".claude"), // absolute: a relative one is looked up from the child's cwd
    TMPDIR: join(home, "tmp"),
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: key,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", // else telemetry and flags go to api.anthropic.com past the base URL
    HTTPS_PROXY: "http://127.0.0.1:9",
    HTTP_PROXY: "http://127.0.0.1:9",
    NO_PROXY: "127.0.0.1,localhost,::1",
  };
}

/** Drills one session; a failure of this session is its result, a Claude Code that cannot be started is ClaudeNotStarted. */
export async function drillSession(session: { data: SessionData; tree: Tree; summary: SessionSummary }, setup: DrillSetup): Promise<DrillResult> {
  const started = setup.clock();
  const { summary } = session;
  const scratch = join(tmpdir(), `sessiontap-drill-${randomUUID().slice(0, 8)}`);
  const result: DrillResult = {
    sessionId: summary.sessionId!,
    ok: false,
    detail: "",
    title: summary.title,
    turns: 0,
    refused: false,
    cwd: summary.cwd,
    scratchCwd: false,
    compactedFirst: false,
    claudeCode: null,
    ms: 0,
  };
  const { fs } = setup;
  let answerer: Awaited<ReturnType<typeof startAnswerer>> | null = null;
  try {
    await fs.mkdir(join(scratch, "tmp"), 0o700);
    checkTrusted(scratch, (await fs.lstat(scratch))!, "directory");
    const there = summary.cwd === null ? null : await fs.lstat(summary.cwd);
    result.scratchCwd = there?.isDirectory !== true;
    const cwd = result.scratchCwd ? join(scratch, "cwd") : summary.cwd!;
    if (result.scratchCwd) await fs.mkdir(cwd, 0o700);
    const restore = { claudeDir: join(scratch, ".claude"), cwd, dryRun: false, force: false, now: setup.clock() };
    const restored = await restoreSession(fs, { ...session, others: session.data }, restore);
    if (!restored.ok) return Object.assign(result, { detail: `restore could not write it: ${restored.why}` });
    const branch = resumedBranch(session.tree);
    result.turns = compareResume(branch, [], PROBE).turns;
    const key = `sk-ant-sessiontap-drill-${randomUUID()}`;
    answerer = await startAnswerer(key, setup.warn);
    const env = childEnv(setup.env, scratch, answerer.url, key);
    const resume = (isolation: string[]) =>
      runClaude(setup.program, ["-p", "--resume", result.sessionId, PROBE, ...isolation], cwd, env, setup.timeoutMs, setup.stop).catch((error) => {
        throw new ClaudeNotStarted(`${setup.program} could not be started (${describe(error)})`);
      });
    // --bare: no hooks, plugins, MCP servers or CLAUDE.md of the project; a Claude Code without it gets the flags that do the same.
    let run = await resume(["--bare"]);
    if (answerer.seen.first === null && run.out.includes("unknown option '--bare'")) run = await resume(["--setting-sources", "", "--strict-mcp-config"]);
    const sent = answerer.seen.first;
    const said = JSON.stringify(run.out.trim().split("\n").find((l) => l.trim() !== "")?.trim().slice(0, 200) ?? "");
    result.claudeCode = /claude-cli\/(\S+)/.exec(answerer.seen.userAgent ?? "")?.[1] ?? null;
    result.refused = sent === null && /No conversation found/.test(run.out);
    if (setup.stop.aborted) result.detail = `stopped by ${setup.stop.reason}`;
    else if (run.timedOut) result.detail = `Claude Code did not finish within ${Math.round(setup.timeoutMs / 1000)} s and was stopped`;
    else if (result.refused) result.detail = `Claude Code refused the resume outright: ${said}`;
    else if (sent === null) result.detail = `Claude Code sent nothing to resume (exit ${run.code}): ${said}`;
    else {
      const verdict = compareResume(branch, Array.isArray(sent.messages) ? sent.messages : [], PROBE);
      Object.assign(result, { ok: verdict.ok && run.code === 0, detail: verdict.detail, compactedFirst: verdict.compactedFirst });
      if (verdict.ok && run.code !== 0) result.detail = `Claude Code resumed, then failed (exit ${run.code}): ${said}`;
    }
    if (result.scratchCwd) result.detail += `; ran in a scratch directory (${summary.cwd ?? "the session's directory"} is ${summary.cwd ? "gone" : "unknown"})`;
    return result;
  } catch (error) {
    if (error instanceof ClaudeNotStarted) throw error;
    return Object.assign(result, { detail: `the drill failed: ${describe(error)}` });
  } finally {
    await answerer?.stop();
    await removeTree(fs, scratch).catch((error) => setup.warn(`sessiontap: could not remove the drill's scratch directory ${scratch}: ${describe(error)}`));
    result.ms = setup.clock() - started;
  }
}
