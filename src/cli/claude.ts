/**
 * `sessiontap claude [ARGS…]`: runs Claude Code with the tap in front (docs/DESIGN.md "The launcher"). It
 * reuses a sessiontap already serving on the configured port, else starts one in this process for the
 * life of the child; sets ANTHROPIC_BASE_URL for the child alone; hands the child the terminal
 * (runtime/child-process.ts); and exits with the child's status once its own tap has stopped and flushed
 * the mirror. A reused tap that goes away while the child runs is replaced on the same port, so the child
 * is never left pointed at a tap that is gone.
 */
import type { Config } from "../config/parse.ts";
import { runInForeground, shellStatus, type Started } from "../runtime/child-process.ts";
import { describe } from "../utils/describe-error.ts";
import { nodeFs } from "../storage/fs-adapter.ts";
import { PriceFileError } from "../usage/prices.ts";
import { isListenError, listenFailure } from "./listen-error.ts";
import { prepareRoot } from "./root-check.ts";
import { type RunningTap, startTap } from "./start-tap.ts";
import { localAddress, type Probe, probeTap, proofKey, unprovenWhy, whichTap } from "./tap-probe.ts";

/** What the launcher reads of the process. */
export interface LauncherIo {
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  workerUrl?: URL | string;
  viewerWorkerUrl?: URL | string;
  fetch?: typeof fetch;
}

/** How often a reused tap is asked whether it still serves. */
const WATCH_MS = 1000;
/** Lines the tap says while the child has the terminal, kept for after it (the rest are counted). */
const HELD_AT_MOST = 50;

/** The tap's stderr lines while the child owns the terminal: held, then printed once it exits (they are in health and the events log too). */
class HeldLines {
  private lines: string[] | null = null;
  private dropped = 0;
  constructor(private readonly out: (text: string) => void) {}
  readonly say = (line: string) => {
    if (this.lines === null) this.out(line + "\n");
    else if (this.lines.length < HELD_AT_MOST) this.lines.push(line);
    else this.dropped++;
  };
  hold() {
    this.lines = [];
  }
  release() {
    const lines = this.lines ?? [];
    this.lines = null;
    if (lines.length > 0) this.out(`sessiontap: while Claude Code ran, the tap said:\n${lines.map((l) => `  ${l}\n`).join("")}`);
    if (this.dropped > 0) this.out(`  … and ${this.dropped} more lines (see /_tap/health and the events log)\n`);
  }
}

type Refusal = { line: string; holder: Probe["kind"] | null };
const isTap = (started: RunningTap | Refusal): started is RunningTap => "url" in started;

/**
 * Starts a tap of our own on `port`; else the line to print and what holds the port. `inThread` runs its
 * mirror engine in this thread: a Worker started while Claude Code holds the terminal takes the terminal's
 * input from it under Deno (docs/DESIGN.md "The launcher").
 */
async function startOwn(
  config: Readonly<Config>,
  port: number,
  io: LauncherIo,
  say: (line: string) => void,
  inThread = false,
): Promise<RunningTap | Refusal> {
  const at = { ...config, port };
  if (config.mirror) {
    const problem = await prepareRoot(nodeFs, config.mirrorDir);
    if (problem !== null) return { line: `sessiontap: cannot mirror to ${config.mirrorDir}: ${problem}`, holder: null };
  }
  try {
    return await startTap(at, { stderr: say, workerUrl: io.workerUrl, viewerWorkerUrl: io.viewerWorkerUrl, inThread });
  } catch (error) {
    if (error instanceof PriceFileError) return { line: `sessiontap: cannot start: ${error.message}`, holder: null };
    return isListenError(error)
      ? await listenFailure(at, error, io.fetch ?? fetch)
      : { line: `sessiontap: cannot start the tap: ${describe(error)}`, holder: null };
  }
}

/** Runs Claude Code (`SESSIONTAP_CLAUDE`, else `claude` on PATH) with `args` through a tap; resolves with its exit status. */
export async function run(config: Readonly<Config>, args: string[], io: LauncherIo): Promise<number> {
  const fetcher = io.fetch ?? fetch;
  const program = io.env.SESSIONTAP_CLAUDE || "claude";
  const held = new HeldLines(io.stderr);
  const url = `http://${localAddress(config.host)}:${config.port}`;
  // Only a tap that proves it is this user's gets the token, and Claude Code's key and prompts after it.
  const key = await proofKey(config.mirror, config.mirrorDir);
  const found = await probeTap(fetcher, url, key, config.token, { timeoutMs: 1000 });
  let own: RunningTap | null = null;
  let tapUrl = url;
  if (found.kind === "mine") {
    io.stderr(`sessiontap: Claude Code goes through the tap already running on ${url} (${whichTap(found.health)})\n`);
  } else {
    const port = found.kind === "none" ? config.port : 0;
    let started = await startOwn(config, port, io, held.say);
    let holder: Probe["kind"] = found.kind;
    // Taken between the look and the listen: by a tap of this user's (use it) or by anything else (any free port).
    if (!isTap(started) && started.holder === "mine") {
      io.stderr(`sessiontap: Claude Code goes through the tap already running on ${url}\n`);
    } else {
      if (!isTap(started) && started.holder !== null) {
        holder = started.holder;
        started = await startOwn(config, 0, io, held.say);
      }
      if (!isTap(started)) {
        io.stderr(`${started.line}\nsessiontap: Claude Code was not started: it would have had no tap to talk to\n`);
        return 1;
      }
      own = started;
      tapUrl = own.url;
      const instead = own.port === config.port || config.port === 0
        ? ""
        : holder === "other"
        ? `port ${config.port} is in use by something that is not a sessiontap; `
        : holder === "unproven"
        ? `port ${config.port} is held by something that could not prove it is this user's sessiontap ${unprovenWhy(config)}; `
        : `port ${config.port} is in use; `;
      io.stderr(
        `sessiontap: ${instead}Claude Code goes through a tap on ${tapUrl} for this session (mirror ${
          config.mirror ? config.mirrorDir : "off"
        }; viewer ${tapUrl}/_tap/)\n`,
      );
    }
  }
  const before = io.env.ANTHROPIC_BASE_URL;
  if (before !== undefined && before !== "" && before.replace(/\/+$/, "") !== tapUrl) {
    io.stderr(
      `sessiontap: ANTHROPIC_BASE_URL was ${before}; Claude Code uses ${tapUrl} instead (the tap forwards to ${config.upstream}: SESSIONTAP_UPSTREAM)\n`,
    );
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(io.env)) if (v !== undefined) env[k] = v;
  env.ANTHROPIC_BASE_URL = tapUrl;

  // A reused tap that stops is replaced on its port; the child's base URL then reaches the new one. A port
  // taken by anything that cannot prove it is this user's tap would get Claude Code's key: the child is stopped.
  let watching: ReturnType<typeof setInterval> | null = null;
  let tick: Promise<void> | null = null;
  let child: Started | null = null;
  if (own === null) {
    let misses = 0;
    const look = async () => {
      try {
        const seen = await probeTap(fetcher, url, key, null, { timeoutMs: 1000, details: false });
        misses = seen.kind === "mine" ? 0 : misses + 1;
        if (misses < 2) return;
        misses = 0;
        const started = await startOwn(config, config.port, io, held.say, true);
        if (isTap(started)) {
          own = started;
          held.say(`sessiontap: the tap on ${url} stopped; this launcher serves Claude Code there now (mirror ${config.mirror ? config.mirrorDir : "off"})`);
        } else if (started.holder === null) {
          // Said at once, over the child's screen: its requests fail from here on.
          io.stderr(`\n${started.line}\nsessiontap: the tap on ${url} stopped and cannot be replaced: Claude Code's requests fail until it is back\n`);
        } else if (started.holder !== "mine") {
          io.stderr(
            `\nsessiontap: the tap on ${url} stopped and port ${config.port} is now held by something that could not prove it is this user's sessiontap: ` +
              `Claude Code is stopped, so that it sends it nothing\n`,
          );
          if (watching !== null) clearInterval(watching);
          if (child?.ok) child.stop();
        }
      } finally {
        tick = null;
      }
    };
    watching = setInterval(() => {
      if (tick === null && own === null) tick = look();
    }, WATCH_MS);
  }

  held.hold();
  child = await runInForeground(program, args, env);
  let status: number;
  if (!child.ok) {
    held.release();
    const missing = child.code === "ENOENT";
    io.stderr(
      missing
        ? `sessiontap: ${program} was not found${
          io.env.SESSIONTAP_CLAUDE ? " (SESSIONTAP_CLAUDE)" : " on PATH"
        }: install Claude Code (npm i -g @anthropic-ai/claude-code), or name it: SESSIONTAP_CLAUDE=/path/to/claude\n`
        : `sessiontap: ${program} could not be started (${child.code}: ${child.message})\n`,
    );
    status = missing ? 127 : 126;
  } else {
    status = shellStatus(await child.exited);
    held.release();
  }
  if (watching !== null) clearInterval(watching);
  await tick; // a replacement being started now is stopped below with the rest
  const mine = own as RunningTap | null;
  if (mine === null) return status;
  // The child is gone: stop the tap it used, which drains, flushes the mirror and saves what it could not write.
  try {
    const unwritten = await mine.stop();
    if (unwritten.kind === "saved") {
      io.stderr(
        `sessiontap: ${unwritten.commits} commits could not be written to ${config.mirrorDir}; saved in ${unwritten.path}: the next start writes them\n`,
      );
    } else if (unwritten.kind === "lost") {
      io.stderr(
        `sessiontap: ${unwritten.commits} commits could not be written and could be saved nowhere (${unwritten.error}): those turns are not mirrored\n`,
      );
      return status === 0 ? 1 : status;
    }
  } catch (error) {
    io.stderr(`sessiontap: the mirror could not be stopped cleanly (${describe(error)}): answers it held in memory are not mirrored\n`);
    return status === 0 ? 1 : status;
  }
  return status;
}
