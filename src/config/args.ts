/**
 * The command line's shape (docs/DESIGN.md "Command line"): argv split into a command, its arguments and
 * its flags, each checked against the command's usage line; a setting read flag first, then environment.
 */
import { BOOL_FLAGS, type Command, COMMAND_SPECS, flagsOf, VALUE_FLAGS } from "./commands.ts";
import { UsageError } from "./usage-error.ts";

/** The environment, as read. */
export type Env = Record<string, string | undefined>;

/** Splits argv into the command, its positional arguments and its flags; rejects flags nobody takes. */
export function splitArgs(argv: string[]): { command: string | null; positional: string[]; flags: Map<string, string | true> } {
  const flags = new Map<string, string | true>();
  const positional: string[] = [];
  let command: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg.startsWith("-") && arg !== "-") {
      const eq = arg.indexOf("=");
      const name = eq > 0 ? arg.slice(0, eq) : arg;
      if (VALUE_FLAGS.has(name)) {
        const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
        if (value === undefined) throw new UsageError(`${name} needs a value`);
        flags.set(name, value);
      } else if (BOOL_FLAGS.has(name) && eq < 0) {
        flags.set(name, true);
      } else {
        throw new UsageError(`unknown option ${name} (see sessiontap --help)`);
      }
    } else if (command === null) {
      command = arg;
    } else {
      positional.push(arg);
    }
  }
  return { command, positional, flags };
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
