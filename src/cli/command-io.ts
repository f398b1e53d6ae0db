/**
 * What a command gets from the outside world, in one object a test can build: output, environment, working
 * directory, filesystem, fetch and clock (docs/DESIGN.md "Command line").
 */
import type { Config } from "../config/parse.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import type { Zone } from "../utils/local-time.ts";

/** The seams of a command. */
export interface CommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  /** The process's working directory (relative `--cwd`/`--out` are resolved against it). */
  cwd: string;
  fs: FsAdapter;
  fetch: typeof fetch;
  clock: () => number;
  /** Standard output is a terminal (colours may be used there, unless NO_COLOR is set). */
  isTTY: boolean;
  /** The reader's time zone (the process's). */
  zone: Zone;
}

/** True when output may be coloured: a terminal, and no NO_COLOR (https://no-color.org). */
export function useColor(io: CommandIo): boolean {
  return io.isTTY && (io.env.NO_COLOR ?? "") === "";
}

/** A command: runs with the resolved config and its seams; resolves with the exit status (docs/DESIGN.md "Command line"). */
export type Command = (config: Readonly<Config>, io: CommandIo) => Promise<number>;
