// What a command gets from the outside world, in one object a test can build (docs/DESIGN.md "Command line").
import type { Config } from "../config/parse.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import type { Zone } from "../utils/local-time.ts";

export interface CommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  /** Relative `--cwd`/`--out` are resolved against it. */
  cwd: string;
  fs: FsAdapter;
  fetch: typeof fetch;
  clock: () => number;
  /** Standard output is a terminal. */
  isTTY: boolean;
  zone: Zone;
}

/** Colour on a terminal, unless NO_COLOR (https://no-color.org). */
export const useColor = (io: CommandIo) => io.isTTY && (io.env.NO_COLOR ?? "") === "";

/** Resolves with the exit status. */
export type Command = (config: Readonly<Config>, io: CommandIo) => Promise<number>;
