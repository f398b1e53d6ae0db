// The command line (docs/DESIGN.md "Command line"): `main(args, env, io)` returns the exit status, so tests
// call it without a process.
import process from "node:process";
import { commandHelp, HELP } from "../config/commands.ts";
import { type Config, parseConfig, UsageError } from "../config/parse.ts";
import { nodeFs } from "../storage/fs-adapter.ts";
import { loadPrices, PriceFileError, type PriceTable } from "../usage/prices.ts";
import { closeStore, migrate, openStore, redactUrl, SCHEMA_VERSION } from "../store/pg-client.ts";
import { describe } from "../utils/describe-error.ts";
import { VERSION } from "../version.ts";
import * as launcher from "./claude.ts";
import { type CommandIo, exitWith, noMirror, print } from "./command-io.ts";
import * as doctor from "./doctor.ts";
import * as drill from "./drill.ts";
import * as mcp from "./mcp.ts";
import * as scan from "./scan.ts";
import { runServe } from "./serve.ts";
import { runExport, runRestore, runShow } from "./session.ts";
import { runList, runSearch, runUsage } from "./sessions.ts";
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
  store: [runStore],
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
    if (error instanceof UsageError) return exitWith(io, 2, error.message);
    throw error;
  }
  switch (config.command) {
    case "help":
      return print(io, config.helpFor === null ? HELP : commandHelp(config.helpFor));
    case "version":
      return print(io, `sessiontap ${VERSION}\n`);
    case "serve":
      return await runServe(config, io);
    case "claude":
      return await launcher.run(config, args.slice(1), io);
  }
  const entry = COMMANDS[config.command];
  try {
    const missing = entry[1] === undefined ? null : await noMirror(config, io);
    if (missing !== null) return missing;
    return entry[1] === "priced" ? await entry[0](config, io, await loadPrices(io.fs, config.prices)) : await entry[0](config, io);
  } catch (error) {
    // A price file it cannot use, or a failure the command did not expect (a full disk): one line, never a stack.
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return exitWith(io, 1, `${error instanceof PriceFileError ? "" : `${config.command} failed: `}${message}`);
  }
}

/** `store migrate`: the schema created or brought up to date under an advisory lock, in one transaction, so taps may write meanwhile. */
async function runStore(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const [sub, ...rest] = config.positional;
  if (sub !== "migrate" || rest.length > 0) {
    return exitWith(io, 2, `store takes one subcommand, migrate${sub === undefined ? "" : `, got "${config.positional.join(" ")}"`}`);
  }
  if (config.store === null) return exitWith(io, 2, "store migrate needs the store (--store / SESSIONTAP_STORE)");
  const where = redactUrl(config.store);
  const sql = openStore(config.store, { max: 1, connectTimeoutS: 10 });
  try {
    const done = await migrate(sql);
    if (done.newer) {
      return print(io, `The store ${where} is at schema version ${done.from}, newer than this sessiontap knows (${SCHEMA_VERSION}); left alone.\n`);
    }
    if (done.applied.length === 0) return print(io, `The store ${where} is at schema version ${done.to}; nothing to do.\n`);
    return print(io, `Migrated the store ${where} from schema version ${done.from ?? "none"} to ${done.to} (applied ${done.applied.join(", ")}).\n`);
  } catch (error) {
    return exitWith(io, 1, `cannot migrate the store ${where}: ${describe(error)}`);
  } finally {
    await closeStore(sql);
  }
}
