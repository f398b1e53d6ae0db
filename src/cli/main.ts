// The command line (docs/DESIGN.md "Command line"): `main(args, env, io)` returns the exit status, so tests
// call it without a process.
import process from "node:process";
import { commandHelp, HELP } from "../config/commands.ts";
import { type Config, parseConfig, UsageError } from "../config/parse.ts";
import { type FsAdapter, nodeFs } from "../storage/fs-adapter.ts";
import type { Zone } from "../utils/local-time.ts";
import { VERSION } from "../version.ts";
import * as launcher from "./claude.ts";
import type { CommandIo } from "./command-io.ts";
import * as doctor from "./doctor.ts";
import * as drill from "./drill.ts";
import * as exportCommand from "./export.ts";
import * as list from "./list.ts";
import * as mcp from "./mcp.ts";
import * as restore from "./restore.ts";
import * as scan from "./scan.ts";
import * as search from "./search.ts";
import { runServe } from "./serve.ts";
import * as show from "./show.ts";
import * as store from "./store.ts";
import * as usage from "./usage.ts";
import * as verify from "./verify.ts";

const COMMANDS = { list, show, search, usage, export: exportCommand, restore, doctor, verify, drill, mcp, scan, store };

/** The process as a command sees it; `fs`, `fetch`, `clock`, `cwd`, `zone` default to the real ones for tests to replace. */
export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  home: string;
  stopSignal: Promise<string>;
  /** The Worker scripts, as the entry point resolves them (in a binary too). */
  workerUrl?: URL | string;
  viewerWorkerUrl?: URL | string;
  cwd?: string;
  fs?: FsAdapter;
  fetch?: typeof fetch;
  clock?: () => number;
  isTTY?: boolean;
  zone?: Zone;
}

/** Runs one command line; resolves with the exit status. */
export async function main(args: string[], env: Record<string, string | undefined>, io: Io): Promise<number> {
  let config: Readonly<Config>;
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
      return await launcher.run(config, args.slice(1), { ...io, env });
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
    zone: io.zone ?? { offsetMinutes: (ms) => -new Date(ms).getTimezoneOffset() },
  };
  try {
    return await COMMANDS[config.command].run(config, commandIo);
  } catch (error) {
    // A failure the command did not expect (an unreadable file, a full disk): one line, never a stack.
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    io.stderr(`sessiontap: ${config.command} failed: ${message}\n`);
    return 1;
  }
}
