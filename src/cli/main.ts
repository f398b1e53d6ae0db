/**
 * The command line (SPEC §2): `main(args, env, io)` returns the exit code, so tests can call it without
 * a process (srvx style).
 */
import { parseConfig, UsageError } from "../config.ts";
import { VERSION } from "../version.ts";
import { HELP } from "./help.ts";
import { runServe } from "./serve.ts";

/** Where a command writes, and the process facts it reads. */
export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  home: string;
  /** Resolves when the process is asked to stop (SIGINT/SIGTERM). */
  stopSignal: Promise<string>;
}

/** Runs one command line; resolves with the exit status. */
export async function main(args: string[], env: Record<string, string | undefined>, io: Io): Promise<number> {
  let config;
  try {
    config = parseConfig(args, env, io.home);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`sessiontap: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  switch (config.command) {
    case "help":
      io.stdout(HELP);
      return 0;
    case "version":
      io.stdout(`sessiontap ${VERSION}\n`);
      return 0;
    case "serve":
      return await runServe(config, io);
    default:
      io.stderr(`sessiontap: "${config.command}" is not yet available in this version\n`);
      return 2;
  }
}
