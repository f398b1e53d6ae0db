// What a command gets from the outside world, in one object a test can build (docs/DESIGN.md "Command line"), and what the
// reading commands share.
import { type Config, settingName } from "../config/parse.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import type { ListEntry, Lookup } from "../storage/mirror-reader.ts";
import { sourceName } from "../store/pg-reader.ts";
import { terminalSafeJson } from "../transcript/records.ts";
import { describe } from "../utils/describe-error.ts";
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
  home: string;
  stopSignal: Promise<string>;
  /** The Worker scripts, as the entry point resolves them (in a binary too). */
  workerUrl?: URL | string;
  viewerWorkerUrl?: URL | string;
}

/** `value` as JSON a terminal shows as it is (`text`: made otherwise); exit status 0. */
export function printJson(io: CommandIo, value: unknown, text = JSON.stringify(value, null, 2)): number {
  io.stdout(terminalSafeJson(text) + "\n");
  return 0;
}

/** Colour on a terminal, unless NO_COLOR (https://no-color.org). */
export const useColor = (io: CommandIo) => io.isTTY && (io.env.NO_COLOR ?? "") === "";

/** The words for `query` matching no session, or several; `none` ends those for no match. */
export function notMatched(query: string, found: Exclude<Lookup, { kind: "found" }>, none: string): string {
  if (found.kind === "none") return `no mirrored session matches "${query}" ${none}`;
  const more = found.candidates.length > 10 ? ", …" : "";
  return `"${query}" matches ${found.candidates.length} sessions (${found.candidates.slice(0, 10).join(", ")}${more}): give more of the id`;
}

export function notFound(config: Readonly<Config>, io: CommandIo, query: string, found: Exclude<Lookup, { kind: "found" }>): number {
  io.stderr(`sessiontap: ${notMatched(query, found, `in ${sourceName(config)} (see sessiontap list)`)}\n`);
  return 1;
}

/** Claude Code's transcript is not whole, and the mirror can put it back. */
export const restorable = (e: ListEntry) =>
  e.claudeTranscript !== "intact" && e.sessionId !== null && e.claudeTranscriptProblem === null && e.claudeTranscriptWarning === null;

/** Exit status 1 with no mirror at the root, naming the setting: an empty listing would read as "nothing was ever mirrored". */
export async function noMirror(config: Readonly<Config>, io: CommandIo): Promise<number | null> {
  if (config.store !== null) return null;
  const root = `${config.mirrorDir} (${settingName(config, "mirrorDir")})`;
  let info;
  try {
    info = await io.fs.lstat(config.mirrorDir);
  } catch (error) {
    io.stderr(`sessiontap: cannot read the mirror root ${root}: ${describe(error)}\n`);
    return 1;
  }
  if (info?.isDirectory) return null;
  io.stderr(
    info === null
      ? `sessiontap: there is no mirror at ${root}: nothing was mirrored there; the tap's startup block names its mirror root\n`
      : `sessiontap: the mirror root ${root} is not a directory\n`,
  );
  return 1;
}

/** A table with a header, left-aligned first column(s) and right-aligned numbers; one line per row, header first. */
export function table(head: string[], rows: string[][], leftColumns: number[] = [0]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const left = new Set(leftColumns);
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 && left.has(i) ? c : left.has(i) ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ").trimEnd();
  return [line(head), ...rows.map(line)];
}
