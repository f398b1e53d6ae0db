// `sessiontap claude [ARGS…]` (docs/DESIGN.md "The launcher"): Claude Code in the foreground of this terminal,
// through a tap of this user's that proves it, else one of its own for the child's life.
import { spawn } from "node:child_process";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { constants } from "node:os";
import process from "node:process";
import { isatty } from "node:tty";
import type { Config } from "../config/parse.ts";
import { type CommandIo, exitWith } from "./command-io.ts";
import { type Refusal, startOrRefuse, stopTap } from "./serve.ts";
import { type RunningTap, startTap } from "./start-tap.ts";
import { localAddress, probeTap, proofKey, unproven, whichTap } from "./tap-probe.ts";

type Started = { ok: true; exited: Promise<number> } | { ok: false; code: string; message: string };

/** The terminal signals the whole foreground group: only what is sent to this process alone is passed on (SIGINT too with no terminal), SIGINT held. */
function runInForeground(command: string, args: string[], env: Record<string, string>, spawned: () => void): Promise<Started> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: "inherit", env });
    const pass = (signal: NodeJS.Signals) => child.exitCode === null && child.signalCode === null && child.kill(signal);
    const hold = () => {};
    // isatty(0), not process.stdin, which could start reading the child's terminal; Windows sends Ctrl-C to the whole console.
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
      const exited = new Promise<number>((done) =>
        child.once("exit", (code, signal) => {
          remove();
          done(code ?? 128 + ((constants.signals as Record<string, number>)[signal ?? ""] ?? 0));
        })
      );
      resolve({ ok: true, exited });
    });
  });
}

const isTap = (started: RunningTap | Refusal): started is RunningTap => "url" in started;

/** Runs Claude Code (`SESSIONTAP_CLAUDE`, else `claude` on PATH) with `args` through a tap; resolves with its exit status. */
export async function run(config: Readonly<Config>, args: string[], io: CommandIo): Promise<number> {
  const fetcher = io.fetch;
  const program = io.env.SESSIONTAP_CLAUDE || "claude";
  // A name may also lead to an address another user holds: the launcher and its child use one address.
  const host = isIP(config.host) ? config.host : await lookup(config.host).then((a) => a.address, () => config.host);
  config = { ...config, host };
  const url = `http://${localAddress(host)}:${config.port}`;
  const mirror = `mirror ${config.mirror ? config.mirrorDir : "off"}`;
  // The tap's lines while the child has the terminal wait for its exit (they are in health and the events log too).
  let held: string[] | null = null;
  let dropped = 0;
  const say = (line: string) => held === null ? io.stderr(line + "\n") : held.length < 50 ? held.push(line) : dropped++;
  // In this thread once the child runs: a Worker started while Claude Code holds the terminal takes its input under Deno.
  const start = (port: number, inThread = false) => startOrRefuse({ ...config, port }, io, say, inThread);
  const key = await proofKey(config.mirror, config.mirrorDir);
  const found = await probeTap(fetcher, url, key, config.token, { timeoutMs: 1000 });
  let own: RunningTap | null = null;
  let notice = `Claude Code goes through the tap already running on ${url}`;
  if (found.kind === "mine") notice += ` (${whichTap(found.health)})`;
  else {
    let started = await start(found.kind === "none" ? config.port : 0);
    let holder = found.kind;
    // Taken between the look and the listen: by a tap of this user's (used), or by anything else (any free port then).
    if (!isTap(started) && started.holder !== null && started.holder !== "mine") {
      holder = started.holder;
      started = await start(0);
    }
    if (!isTap(started) && started.holder !== "mine") {
      return exitWith(io, 1, `${started.line}\nsessiontap: Claude Code was not started: it would have had no tap to talk to`);
    }
    if (isTap(started)) {
      own = started;
      const held: Partial<Record<typeof holder, string>> = {
        other: "is in use by something that is not a sessiontap",
        unproven: `is held by ${unproven(config)}`,
      };
      const instead = own.port === config.port || config.port === 0 ? "" : `port ${config.port} ${held[holder] ?? "is in use"}; `;
      notice = `${instead}Claude Code goes through a tap on ${own.url} for this session (${mirror}; viewer ${own.viewer})`;
    }
  }
  // A reused tap's port is anyone's the moment that tap stops, so the child is pointed at a port of the launcher's own: a
  // tap with its mirror off that proves the reused one before each request, and once it cannot, sends to a tap of its own.
  let front: RunningTap | null = null;
  if (own === null) {
    let replaced: Promise<string> | null = null;
    const replace = async () => {
      const started = await start(0, true);
      if (!isTap(started)) throw new Error(`the tap on ${url} stopped and none could be started: sessiontap: ${started.line}`);
      own = started;
      say(`sessiontap: the tap on ${url} stopped or cannot prove it is this user's; Claude Code goes through a tap on ${own.url} now (${mirror})`);
      return own.url;
    };
    const proving = async (input: RequestInfo | URL, init?: RequestInit) => {
      if (replaced === null && (await probeTap(fetcher, url, key, null, { details: false })).kind !== "mine") replaced = replace();
      return await fetcher(String(input).replace(url, replaced === null ? url : await replaced), init);
    };
    const loopback = host.includes(":") ? "::1" : "127.0.0.1";
    const settings = { ...config, host: loopback, port: 0, mirror: false, upstream: url, store: null, proxy: null };
    front = await startTap(settings, { stderr: say, fetch: proving as typeof fetch, inThread: true });
    notice += `, from ${front.url}`;
  }
  const tapUrl = (front ?? own!).url;
  const before = io.env.ANTHROPIC_BASE_URL;
  const notices = [notice];
  if (before && ![tapUrl, front === null ? tapUrl : url].includes(before.replace(/\/+$/, ""))) {
    notices.push(`ANTHROPIC_BASE_URL was ${before}; Claude Code uses ${tapUrl} instead (the tap forwards to ${config.upstream}: SESSIONTAP_UPSTREAM)`);
  }
  const env = Object.fromEntries(Object.entries({ ...io.env, ANTHROPIC_BASE_URL: tapUrl }).filter(([, v]) => v !== undefined)) as Record<string, string>;

  held = [];
  const child = await runInForeground(program, args, env, () => io.stderr(notices.map((n) => `sessiontap: ${n}\n`).join("")));
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
  await front?.stop();
  const mine = own as RunningTap | null;
  // The child is gone: its tap drains, flushes the mirror and saves what it could not write.
  return mine === null || (await stopTap(mine, config, io.stderr)) || status !== 0 ? status : 1;
}
