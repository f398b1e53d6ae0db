// `sessiontap drill [SESSION…]` (docs/DESIGN.md "Drill"): each session written as `restore` writes it into a scratch Claude Code
// config, resumed there by the user's Claude Code against a loopback answerer, and what it sent compared with the mirror.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path/posix";
import process from "node:process";
import type { Config } from "../config/parse.ts";
import { restoreSession } from "../restore/restore-session.ts";
import { listen } from "../runtime/index.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { LAST_DRILL, type SessionSource } from "../storage/mirror-reader.ts";
import { replaceFile } from "../storage/publish.ts";
import { checkTrusted } from "../storage/trusted-path.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { compareResume } from "../transcript/restore-plan.ts";
import { jsonObject } from "../protocol/json.ts";
import { oneLine, type Rec, scrubLine } from "../transcript/records.ts";
import { withTree } from "../transcript/summary.ts";
import { resumedBranch } from "../transcript/tree.ts";
import { describe, plural } from "../utils/describe-error.ts";
import { type CommandIo, exitWith, notMatched, print, printJson } from "./command-io.ts";

const PROBE = "sessiontap drill: this resume is a check; reply with OK";

type DrillResult = Awaited<ReturnType<typeof drillSession>>;

type DrillSetup = { io: CommandIo; program: string; timeoutMs: number; stop: AbortSignal };

class ClaudeNotStarted extends Error {}

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

// Keeps the first conversation request and answers each with a minimal valid reply, never an error to retry; a request without
// this run's key (another local user's) is answered as a route that is not there.
async function startAnswerer(key: string, warn: (line: string) => void) {
  const seen = { first: null as Rec | null, userAgent: null as string | null };
  const server = await listen(async (request) => {
    const path = request.headers.get("x-api-key") === key ? new URL(request.url).pathname : "";
    const text = request.method === "POST" ? await request.text() : "";
    const body = jsonObject(text) as Rec | null;
    if (path === "/v1/messages/count_tokens") return Response.json({ input_tokens: Math.ceil(text.length / 4) });
    if (path !== "/v1/messages" || body === null) {
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
      } catch (error) {
        // ESRCH: the group is gone already; any other failure to stop it fails the drill (it runs inside event handlers: reject, not throw).
        if ((error as NodeJS.ErrnoException).code !== "ESRCH") reject(new Error(`could not kill Claude Code's process group: ${describe(error)}`));
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

/** Never follows a link out of the scratch tree. */
async function removeTree(fs: FsAdapter, path: string): Promise<void> {
  const info = await fs.lstat(path);
  if (info?.isDirectory) {
    for (const entry of await fs.readdir(path)) await removeTree(fs, join(path, entry.name));
    await fs.rmdir(path);
  } else if (info !== null) await fs.unlink(path);
}

/** The user's environment less every credential, provider switch and proxy of Claude Code's, with the scratch config and the answerer. */
function childEnv(env: Record<string, string | undefined>, home: string, url: string, key: string): Record<string, string> {
  const kept = Object.entries(env).filter(([k, v]) => v !== undefined && !/^(ANTHROPIC_|CLAUDE_|CLAUDECODE)/.test(k) && !/^(https?|all|no)_proxy$/i.test(k));
  return {
    ...(Object.fromEntries(kept) as Record<string, string>),
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

/** A failure of this session is its result; a Claude Code that cannot be started throws ClaudeNotStarted. */
async function drillSession(session: ReturnType<typeof withTree>, setup: DrillSetup) {
  const started = setup.io.clock();
  const { summary } = session;
  const scratch = join(tmpdir(), `sessiontap-drill-${randomUUID().slice(0, 8)}`);
  const result = {
    sessionId: summary.sessionId!,
    ok: false,
    detail: "",
    title: summary.title,
    turns: 0,
    /** Claude Code said "No conversation found…". */
    refused: false,
    /** Where Claude Code ran unless it is gone: then in a scratch directory. */
    cwd: summary.cwd,
    scratchCwd: false,
    compactedFirst: false,
    /** The Claude Code version its requests named. */
    claudeCode: null as string | null,
    ms: 0,
  };
  const { fs } = setup.io;
  let answerer: Awaited<ReturnType<typeof startAnswerer>> | null = null;
  try {
    await fs.mkdir(join(scratch, "tmp"), 0o700);
    checkTrusted(scratch, (await fs.lstat(scratch))!, "directory");
    const there = summary.cwd === null ? null : await fs.lstat(summary.cwd);
    result.scratchCwd = there?.isDirectory !== true;
    const cwd = result.scratchCwd ? join(scratch, "cwd") : summary.cwd!;
    if (result.scratchCwd) await fs.mkdir(cwd, 0o700);
    const restore = { claudeDir: join(scratch, ".claude"), cwd, dryRun: false, force: false, now: setup.io.clock() };
    const restored = await restoreSession(fs, session, restore);
    if (!restored.ok) return Object.assign(result, { detail: `restore could not write it: ${restored.why}` });
    const branch = resumedBranch(session.tree);
    result.turns = compareResume(branch, [], PROBE).turns;
    const key = `sk-ant-sessiontap-drill-${randomUUID()}`;
    answerer = await startAnswerer(key, (line) => setup.io.stderr(line + "\n"));
    const env = childEnv(setup.io.env, scratch, answerer.url, key);
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
    await removeTree(fs, scratch).catch((error) =>
      setup.io.stderr(`sessiontap: could not remove the drill's scratch directory ${scratch}: ${describe(error)}\n`)
    );
    result.ms = setup.io.clock() - started;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The sessions named (each must match one: else exit 2, named), or every one Claude Code could resume by its id, newest first. */
async function pick(config: Readonly<Config>, io: CommandIo, source: SessionSource) {
  if (config.positional.length === 0) {
    const all = (await source.loadAll()).map(withTree).sort((a, b) => (b.summary.lastTimestamp ?? "").localeCompare(a.summary.lastTimestamp ?? ""));
    const drillable = all.filter((s) => UUID.test(s.summary.sessionId ?? ""));
    return { sessions: drillable, skipped: all.length - drillable.length };
  }
  const sessions = new Map<string, ReturnType<typeof withTree>>();
  for (const query of config.positional) {
    const found = await source.lookup(query);
    if (found.kind !== "found") {
      const none = `"${query}" matches no session in ${sourceName(config)} (see sessiontap list)`;
      return exitWith(io, 2, `drill: ${found.kind === "none" ? none : notMatched(query, found, "")}`);
    }
    sessions.set(found.data.dir, withTree(found.data));
  }
  return { sessions: [...sessions.values()], skipped: 0 };
}

function line(r: DrillResult): string {
  const title = r.title === null ? "" : `  ${oneLine(r.title, 60)}`;
  return scrubLine(`${r.ok ? "ok  " : "FAIL"}  ${r.sessionId}  ${plural(r.turns, "turn")}${title}: ${r.detail}`) + "\n";
}

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  return await withSessionSource(config, io.fs, async (source) => {
    const picked = await pick(config, io, source);
    if (typeof picked === "number") return picked;
    const { sessions, skipped } = picked;
    const stop = new AbortController();
    if (sessions.length === 0) return print(io, config.json ? "[]\n" : `Nothing to drill in ${sourceName(config)}.\n`);
    const setup = { io, program: io.env.SESSIONTAP_CLAUDE || "claude", timeoutMs: config.drillTimeoutMs, stop: stop.signal };
    const results: DrillResult[] = [];
    const bar = io.isTTY && !config.json && sessions.length > 3;
    const progress = () => {
      const filled = Math.round((results.length / sessions.length) * 30);
      if (bar) io.stdout(`\r[${"#".repeat(filled)}${".".repeat(30 - filled)}] ${results.length}/${sessions.length}`);
    };
    let next = 0;
    let stopped: unknown = null;
    const worker = async () => {
      while (next < sessions.length && stopped === null && !stop.signal.aborted) {
        const session = sessions[next++];
        try {
          const result = await drillSession(session, setup);
          results.push(result);
          if (!config.json) io.stdout((bar ? "\r\x1b[K" : "") + line(result));
          progress();
        } catch (error) {
          stopped ??= error; // the others finish what they started: no child is left running
        }
      }
    };
    const jobs = Math.min(config.jobs ?? Math.min(availableParallelism(), 4), sessions.length);
    progress();
    void io.stopSignal.then((signal) => stop.abort(signal));
    await Promise.all(Array.from({ length: jobs }, worker));
    if (bar) io.stdout("\r\x1b[K");
    if (stopped instanceof ClaudeNotStarted) {
      const where = io.env.SESSIONTAP_CLAUDE ? "SESSIONTAP_CLAUDE" : "on PATH";
      return exitWith(io, 1, `drill: ${stopped.message} (${where}): install Claude Code, or name it: SESSIONTAP_CLAUDE=/path/to/claude`);
    }
    if (stopped !== null) throw stopped;
    if (stop.signal.aborted) return exitWith(io, 1, `drill stopped by ${stop.signal.reason} after ${plural(results.length, "session")}`);
    const order = new Map(sessions.map((s, i) => [s.summary.sessionId, i]));
    results.sort((a, b) => order.get(a.sessionId)! - order.get(b.sessionId)!);
    const passed = results.filter((r) => r.ok).length;
    const claudeCode = results.find((r) => r.claudeCode !== null)?.claudeCode ?? null;
    if (config.json) printJson(io, results);
    else {
      const what = `${plural(results.length, "session")} drilled${claudeCode === null ? "" : ` with Claude Code ${claudeCode}`}`;
      const others = skipped === 0 ? "" : `; ${plural(skipped, "session")} without a Claude Code session id not drilled`;
      const failed = results.length - passed;
      const verdict = failed === 0 ? ": every one resumed whole" : `: ${passed} resumed whole, ${failed} did not (docs/recovery.md says what a failure means)`;
      io.stdout(`\n${what}${verdict}${others}.\n`);
    }
    const root = await io.fs.lstat(config.mirrorDir);
    if (root?.isDirectory) {
      const record = { at: new Date(io.clock()).toISOString(), drilled: results.length, passed, named: config.positional.length > 0, claudeCode };
      await replaceFile(io.fs, join(config.mirrorDir, LAST_DRILL), JSON.stringify(record) + "\n");
    }
    return passed === results.length ? 0 : 1;
  });
}
