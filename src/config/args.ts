/**
 * The command line's shape (docs/DESIGN.md "Command line"): argv split into a command, its arguments and
 * its flags by `node:util`'s parseArgs, with the flags the command table declares, each checked against
 * the command's usage line; a setting read flag first, then environment.
 */
import { parseArgs } from "node:util";
import { type Command, COMMAND_SPECS, flagsOf } from "./commands.ts";
import { UsageError } from "./usage-error.ts";

/** The environment, as read. */
export type Env = Record<string, string | undefined>;

/** Every flag some command takes, as parseArgs declares options: a value's flags are strings, switches booleans. */
const OPTIONS = Object.fromEntries([
  ...Object.values(COMMAND_SPECS).flatMap((spec) => spec.flags).map((x) => [x.flag.slice(2), { type: x.value === null ? "boolean" : "string" }] as const),
  ["help", { type: "boolean", short: "h" }],
  ["version", { type: "boolean", short: "V" }],
]);

/**
 * Splits argv into the command, its positional arguments and its flags (by long name: `-h` is `--help`);
 * rejects flags nobody takes, a flag without its value, and a switch given one. Everything after `--` is positional.
 */
export function splitArgs(argv: string[]): { command: string | null; positional: string[]; flags: Map<string, string | true> } {
  // Not strict: parseArgs' own errors differ between runtimes, so each token is checked here, in our words.
  const { tokens } = parseArgs({ args: argv, options: OPTIONS, strict: false, allowPositionals: true, tokens: true });
  const flags = new Map<string, string | true>();
  const positional: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") positional.push(token.value);
    if (token.kind !== "option") continue;
    const type = Object.hasOwn(OPTIONS, token.name) ? OPTIONS[token.name].type : undefined;
    if (type === undefined) throw new UsageError(`unknown option ${token.rawName} (see sessiontap --help)`);
    if (type === "string" && token.value === undefined) throw new UsageError(`${token.rawName} needs a value`);
    if (type === "boolean" && token.value !== undefined) throw new UsageError(`${token.rawName} takes no value (see sessiontap --help)`);
    flags.set(`--${token.name}`, token.value ?? true);
  }
  return { command: positional.shift() ?? null, positional, flags };
}

/** Rejects a flag the command does not take (its usage line lists those it does). */
export function checkFlags(command: Command, flags: Map<string, string | true>): void {
  const allowed = flagsOf(command);
  for (const name of flags.keys()) {
    if (!allowed.has(name)) throw new UsageError(`${command} does not take ${name} (see sessiontap ${command} --help)`);
  }
  if (command === "doctor" && flags.has("--url") && flags.has("--port")) {
    throw new UsageError(`doctor takes --url or --port, not both (see sessiontap doctor --help)`);
  }
}

/** Checks the count of positional arguments against the command's usage line. */
export function checkArgs(command: Command, positional: string[]): void {
  const wanted = COMMAND_SPECS[command].args;
  if (positional.length > wanted.length) {
    const extra = positional.slice(wanted.length).map((a) => `"${a}"`).join(" ");
    throw new UsageError(`${command} takes ${wanted.length === 0 ? "no arguments" : wanted.join(" ")}, got ${extra} too (see sessiontap ${command} --help)`);
  }
  if (positional.length < wanted.length || positional.some((a) => a === "")) {
    const what = wanted[positional.length] ?? wanted[0];
    throw new UsageError(
      what === "SESSION"
        ? `${command} needs a SESSION (an id or a unique prefix; see sessiontap list)`
        : `${command} needs ${what} (see sessiontap ${command} --help)`,
    );
  }
}

/** Reads a setting: flag first, then environment variable, then the default. */
export function pick(flags: Map<string, string | true>, flag: string | null, env: Env, envName: string | null): string | undefined {
  const fromFlag = flag ? flags.get(flag) : undefined;
  if (typeof fromFlag === "string") return fromFlag;
  const fromEnv = envName ? env[envName] : undefined;
  return fromEnv === undefined || fromEnv === "" ? undefined : fromEnv;
}
