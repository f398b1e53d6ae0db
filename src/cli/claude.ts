// `sessiontap claude [ARGS…]` (docs/DESIGN.md "The launcher"): Claude Code in the foreground of this terminal,
// through a tap of this user's that proves it, else one of its own for the child's life.
import { spawn } from "node:child_process";
import { constants } from "node:os";
import process from "node:process";
import { isatty } from "node:tty";
import type { Config } from "../config/parse.ts";
import { type Refusal, startOrRefuse, stopTap } from "./serve.ts";
import type { RunningTap } from "./start-tap.ts";
import { localAddress, probeTap, proofKey, unprovenWhy, whichTap } from "./tap-probe.ts";

export interface LauncherIo {
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  workerUrl?: URL | string;
  viewerWorkerUrl?: URL | string;
  fetch?: typeof fetch;
}

type Started = { ok: true; exited: Promise<number>; stop: () => void } | { ok: false; code: string; message: string };

/**
 * Starts `command` with the terminal; `spawned` runs once it did. The terminal sends Ctrl-C and window-size
 * changes to the whole foreground group, so only what is sent to this process alone is passed on (SIGINT too
 * when there is no terminal), and SIGINT is held meanwhile: the child decides what a Ctrl-C means.
 */
function runInForeground(command: string, args: string[], env: Record<string, string>, spawned: () => void): Promise<Started> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: "inherit", env });
    const pass = (signal: NodeJS.Signals) => {
      try {
        child.kill(signal);
      } catch {
        // it has just exited: nothing to pass on
      }
    };
    const hold = () => {};
    // Windows delivers Ctrl-C to every process of the console; isatty(0), not process.stdin, which could start reading the child's terminal.
    const passing: NodeJS.Signals[] = process.platform === "win32" ? [] : isatty(0) ? ["SIGTERM", "SIGHUP"] : ["SIGTERM", "SIGHUP", "SIGINT"];
    const remove = () => {
      for (const s of passing) process.off(s, pass);
      process.off("SIGINT", hold);
    };
    child.once("error", (error: NodeJS.ErrnoException) => {
      remove();
      resolve({ ok: false, code: error.code ?? "ERROR", message: error.message });
    });
    child.once("spawn", () => {
      for (const s of passing) process.on(s, pass);
      if (!passing.includes("SIGINT")) process.on("SIGINT", hold);
      spawned();
      // As a shell reports it: the code, or 128 + the signal's number.
      const exited = new Promise<number>((done) =>
        child.once("exit", (code, signal) => {
          remove();
          done(code ?? 128 + ((constants.signals as Record<string, number>)[signal ?? ""] ?? 0));
        })
      );
      resolve({ ok: true, exited, stop: () => pass("SIGTERM") });
    });
  });
}

/** Runs Claude Code (`SESSIONTAP_CLAUDE`, else `claude` on PATH) with `args` through a tap; resolves with its exit status. */
export async function run(config: Readonly<Config>, args: string[], io: LauncherIo): Promise<number> {
  const fetcher = io.fetch ?? fetch;
  const program = io.env.SESSIONTAP_CLAUDE || "claude";
  const url = `http://${localAddress(config.host)}:${config.port}`;
  const mirror = `mirror ${config.mirror ? config.mirrorDir : "off"}`;
  // The tap's lines while the child has the terminal wait for its exit (they are in health and the events log too).
  let held: string[] | null = null;
  let dropped = 0;
  const say = (line: string) => held === null ? io.stderr(line + "\n") : held.length < 50 ? held.push(line) : dropped++;
  const tapDeps = (inThread: boolean) => ({ stderr: say, workerUrl: io.workerUrl, viewerWorkerUrl: io.viewerWorkerUrl, inThread });
  const isTap = (started: RunningTap | Refusal): started is RunningTap => "url" in started;
  // Only a tap that proves it is this user's gets the token, and then Claude Code's key and prompts.
  const key = await proofKey(config.mirror, config.mirrorDir);
  const found = await probeTap(fetcher, url, key, config.token, { timeoutMs: 1000 });
  let own: RunningTap | null = null;
  const notices: string[] = [];
  if (found.kind === "mine") notices.push(`Claude Code goes through the tap already running on ${url} (${whichTap(found.health)})`);
  else {
    let started = await startOrRefuse({ ...config, port: found.kind === "none" ? config.port : 0 }, tapDeps(false), fetcher);
    let holder = found.kind;
    // Taken between the look and the listen: by a tap of this user's (use it) or by anything else (any free port).
    if (!isTap(started) && started.holder !== null && started.holder !== "mine") {
      holder = started.holder;
      started = await startOrRefuse({ ...config, port: 0 }, tapDeps(false), fetcher);
    }
    if (!isTap(started) && started.holder === "mine") notices.push(`Claude Code goes through the tap already running on ${url}`);
    else if (!isTap(started)) {
      io.stderr(`${started.line}\nsessiontap: Claude Code was not started: it would have had no tap to talk to\n`);
      return 1;
    } else {
      own = started;
      const instead = own.port === config.port || config.port === 0
        ? ""
        : holder === "other"
        ? `port ${config.port} is in use by something that is not a sessiontap; `
        : holder === "unproven"
        ? `port ${config.port} is held by something that could not prove it is this user's sessiontap ${unprovenWhy(config)}; `
        : `port ${config.port} is in use; `;
      notices.push(`${instead}Claude Code goes through a tap on ${own.url} for this session (${mirror}; viewer ${own.viewer})`);
    }
  }
  const tapUrl = own?.url ?? url;
  const before = io.env.ANTHROPIC_BASE_URL;
  if (before && before.replace(/\/+$/, "") !== tapUrl) {
    notices.push(`ANTHROPIC_BASE_URL was ${before}; Claude Code uses ${tapUrl} instead (the tap forwards to ${config.upstream}: SESSIONTAP_UPSTREAM)`);
  }
  const env: Record<string, string> = { ...io.env as Record<string, string>, ANTHROPIC_BASE_URL: tapUrl };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];

  // A reused tap that stops is replaced on its port, where the child's base URL then reaches the new one. A port
  // taken by anything that cannot prove it is this user's would get Claude Code's key: the child is stopped.
  let child: Started | null = null;
  let tick: Promise<void> | null = null;
  let misses = 0;
  const look = async () => {
    const seen = await probeTap(fetcher, url, key, null, { timeoutMs: 1000, details: false });
    misses = seen.kind === "mine" ? 0 : misses + 1;
    if (misses < 2) return;
    misses = 0;
    // Its engine in this thread: a Worker started while Claude Code holds the terminal takes its input under Deno.
    const started = await startOrRefuse(config, tapDeps(true), fetcher);
    if (isTap(started)) {
      own = started;
      say(`sessiontap: the tap on ${url} stopped; this launcher serves Claude Code there now (${mirror})`);
    } else if (started.holder === null) {
      // Said at once, over the child's screen: its requests fail from here on.
      io.stderr(`\n${started.line}\nsessiontap: the tap on ${url} stopped and cannot be replaced: Claude Code's requests fail until it is back\n`);
    } else if (started.holder !== "mine") {
      io.stderr(
        `\nsessiontap: the tap on ${url} stopped and port ${config.port} is now held by something that could not prove it is this user's sessiontap: ` +
          `Claude Code is stopped, so that it sends it nothing\n`,
      );
      clearInterval(watching);
      if (child?.ok) child.stop();
    }
  };
  const watching = setInterval(() => {
    if (tick === null && own === null) tick = look().finally(() => (tick = null));
  }, 1000);
  if (own !== null) clearInterval(watching);

  held = [];
  child = await runInForeground(program, args, env, () => io.stderr(notices.map((n) => `sessiontap: ${n}\n`).join("")));
  const status = child.ok ? await child.exited : child.code === "ENOENT" ? 127 : 126;
  const lines = held;
  held = null;
  if (lines.length > 0) io.stderr(`sessiontap: while Claude Code ran, the tap said:\n${lines.map((l) => `  ${l}\n`).join("")}`);
  if (dropped > 0) io.stderr(`  … and ${dropped} more lines (see /_tap/health and the events log)\n`);
  if (!child.ok) {
    const where = io.env.SESSIONTAP_CLAUDE ? " (SESSIONTAP_CLAUDE)" : " on PATH";
    io.stderr(
      status === 127
        ? `sessiontap: ${program} was not found${where}: install Claude Code (npm i -g @anthropic-ai/claude-code), or name it: SESSIONTAP_CLAUDE=/path/to/claude\n`
        : `sessiontap: ${program} could not be started (${child.code}: ${child.message})\n`,
    );
  }
  clearInterval(watching);
  await tick; // a replacement being started now is stopped below with the rest
  const mine = own as RunningTap | null;
  // The child is gone: its tap drains, flushes the mirror and saves what it could not write.
  return mine === null || (await stopTap(mine, config, io.stderr)) || status !== 0 ? status : 1;
}
