/**
 * The command line (docs/DESIGN.md "Command line"): `main(args, env, io)` returns the exit code, so tests
 * can call it without a process (srvx style).
 */
import process from "node:process";
import { type Config, parseConfig, UsageError } from "../config/parse.ts";
import { type FsAdapter, nodeFs } from "../storage/fs-adapter.ts";
import { VERSION } from "../version.ts";
import type { Command, CommandIo } from "./command-io.ts";
import * as launcher from "./claude.ts";
import * as doctor from "./doctor.ts";
import * as exportCommand from "./export.ts";
import { HELP } from "../config/help.ts";
import { commandHelp } from "../config/commands.ts";
import * as list from "./list.ts";
import * as restore from "./restore.ts";
import * as search from "./search.ts";
import { runServe } from "./serve.ts";
import * as show from "./show.ts";
import * as store from "./store.ts";
import * as usage from "./usage.ts";
import * as verify from "./verify.ts";
import type { Zone } from "../utils/local-time.ts";

/** The reading commands, one module each, each exporting `run(config, io)`. */
const COMMANDS: Partial<Record<Config["command"], Command>> = {
  list: list.run,
  show: show.run,
  search: search.run,
  usage: usage.run,
  export: exportCommand.run,
  restore: restore.run,
  doctor: doctor.run,
  verify: verify.run,
  store: store.run,
};

/** The process's time zone, as the runtime knows it (TZ, else the system's). */
const LOCAL_ZONE: Zone = { offsetMinutes: (ms) => -new Date(ms).getTimezoneOffset() };

/** Where a command writes, and the process facts it reads. */
export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  home: string;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM). */
  stopSignal: Promise<string>;
  /** The mirror engine's Worker script (src/mirror-worker.ts), as the entry point resolves it (in a binary too). */
  workerUrl?: URL | string;
  /** The viewer's reader Worker script (src/viewer-worker.ts), resolved the same way. */
  viewerWorkerUrl?: URL | string;
  /** The working directory (default: the process's). */
  cwd?: string;
  /** Seams for tests (defaults: node:fs, global fetch, Date.now). */
  fs?: FsAdapter;
  fetch?: typeof fetch;
  clock?: () => number;
  /** Standard output is a terminal (default: no). */
  isTTY?: boolean;
  /** The reader's time zone (default: the process's). */
  zone?: Zone;
}

/** Runs one command line; resolves with the exit status. */
export async function main(args: string[], env: Record<string, string | undefined>, io: Io): Promise<number> {
  let config;
  // `claude ARGS…`: every argument after it is Claude Code's, never parsed as ours (but a lone --help).
  const launch = args[0] === "claude" && !(args.length === 2 && (args[1] === "--help" || args[1] === "-h"));
  try {
    config = parseConfig(launch ? ["claude"] : args, env, io.home);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`sessiontap: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  switch (config.command) {
    case "help":
      io.stdout(config.helpFor === null ? HELP : commandHelp(config.helpFor));
      return 0;
    case "version":
      io.stdout(`sessiontap ${VERSION}\n`);
      return 0;
    case "serve":
      return await runServe(config, io);
    case "claude":
      return await launcher.run(config, args.slice(1), {
        stderr: io.stderr,
        env,
        workerUrl: io.workerUrl,
        viewerWorkerUrl: io.viewerWorkerUrl,
        fetch: io.fetch,
      });
  }
  const command = COMMANDS[config.command];
  if (command === undefined) {
    io.stderr(`sessiontap: "${config.command}" is not yet available in this version\n`);
    return 2;
  }
  const commandIo: CommandIo = {
    stdout: io.stdout,
    stderr: io.stderr,
    env,
    cwd: io.cwd ?? process.cwd(),
    fs: io.fs ?? nodeFs,
    fetch: io.fetch ?? fetch,
    clock: io.clock ?? Date.now,
    isTTY: io.isTTY ?? false,
    zone: io.zone ?? LOCAL_ZONE,
  };
  try {
    return await command(config, commandIo);
  } catch (error) {
    // A failure the command did not expect (an unreadable file, a full disk): one line, never a stack.
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    io.stderr(`sessiontap: ${config.command} failed: ${message}\n`);
    return 1;
  }
}
