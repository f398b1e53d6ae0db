// The command line (docs/DESIGN.md "Command line"): `main(args, env, io)` returns the exit status, so tests
// call it without a process.
import process from "node:process";
import { commandHelp, HELP } from "../config/commands.ts";
import { type Config, parseConfig, UsageError } from "../config/parse.ts";
import { nodeFs } from "../storage/fs-adapter.ts";
import { loadPrices, type PriceTable } from "../usage/prices.ts";
import { VERSION } from "../version.ts";
import * as launcher from "./claude.ts";
import { type CommandIo, noMirror } from "./command-io.ts";
import * as doctor from "./doctor.ts";
import * as drill from "./drill.ts";
import * as mcp from "./mcp.ts";
import * as scan from "./scan.ts";
import { runServe } from "./serve.ts";
import { runExport, runRestore, runShow } from "./session.ts";
import { runList, runSearch, runUsage } from "./sessions.ts";
import * as store from "./store.ts";
import * as verify from "./verify.ts";

type Run = (config: Readonly<Config>, io: CommandIo) => Promise<number>;
type Entry = [Run] | [Run, "mirror"] | [(config: Readonly<Config>, io: CommandIo, prices: PriceTable) => Promise<number>, "priced"];

/** What each command reads first: "mirror" the tree (none there is exit 1), "priced" the price table too. */
const COMMANDS: Record<Exclude<Config["command"], "help" | "version" | "serve" | "claude">, Entry> = {
  list: [runList, "priced"],
  show: [runShow, "priced"],
  search: [runSearch, "mirror"],
  usage: [runUsage, "priced"],
  export: [runExport, "priced"],
  restore: [runRestore, "mirror"],
  verify: [verify.run, "mirror"],
  doctor: [doctor.run],
  drill: [drill.run, "mirror"],
  mcp: [mcp.run],
  scan: [scan.run],
  store: [store.run],
};

/** What is left out is the real process's (tests replace `fs`, `fetch`, `clock`, `cwd`, `zone`). */
export type Io = Pick<CommandIo, "stdout" | "stderr" | "home" | "stopSignal"> & Partial<Omit<CommandIo, "env">>;

export async function main(args: string[], env: Record<string, string | undefined>, given: Io): Promise<number> {
  const io: CommandIo = {
    env,
    cwd: process.cwd(),
    fs: nodeFs,
    fetch,
    clock: Date.now,
    isTTY: false,
    zone: { offsetMinutes: (ms) => -new Date(ms).getTimezoneOffset() },
    ...given,
  };
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
      return await launcher.run(config, args.slice(1), io);
  }
  const entry = COMMANDS[config.command];
  try {
    const missing = entry[1] === undefined ? null : await noMirror(config, io);
    if (missing !== null) return missing;
    if (entry[1] !== "priced") return await entry[0](config, io);
    let prices: PriceTable;
    try {
      prices = await loadPrices(io.fs, config.prices);
    } catch (error) {
      io.stderr(`sessiontap: ${(error as Error).message}\n`);
      return 1;
    }
    return await entry[0](config, io, prices);
  } catch (error) {
    // A failure the command did not expect (an unreadable file, a full disk): one line, never a stack.
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    io.stderr(`sessiontap: ${config.command} failed: ${message}\n`);
    return 1;
  }
}
