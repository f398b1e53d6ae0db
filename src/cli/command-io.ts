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
  isTTY: boolean;
  zone: Zone;
  home: string;
  stopSignal: Promise<string>;
  /** The Worker scripts, as the entry point resolves them (in a binary too). */
  workerUrl?: URL | string;
  viewerWorkerUrl?: URL | string;
}

/** `line` on stderr, as sessiontap's; returns `code`, the exit status it ends the command with. */
export function exitWith(io: CommandIo, code: number, line: string): number {
  io.stderr(`sessiontap: ${line}\n`);
  return code;
}

/** `text` on stdout; exit status 0. */
export function print(io: CommandIo, text: string): number {
  io.stdout(text);
  return 0;
}

/** `value` as JSON a terminal shows as it is (`text`: made otherwise); exit status 0. */
export function printJson(io: CommandIo, value: unknown, text = JSON.stringify(value, null, 2)): number {
  return print(io, terminalSafeJson(text) + "\n");
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
  return exitWith(io, 1, notMatched(query, found, `in ${sourceName(config)} (see sessiontap list)`));
}

/** Claude Code's transcript is not whole, and the mirror can put it back. */
export const restorable = (e: ListEntry) =>
  e.claudeTranscript !== "intact" && e.sessionId !== null && e.claudeTranscriptProblem === null && e.claudeTranscriptWarning === null;

/** Exit status 1 with no mirror at the root, naming the setting: an empty listing would read as "nothing was ever mirrored". */
export async function noMirror(config: Readonly<Config>, io: CommandIo): Promise<number | null> {
  if (config.store !== null) return null;
  const root = `${config.mirrorDir} (${settingName(config, "mirrorDir")})`;
  const info = await io.fs.lstat(config.mirrorDir).catch((error) => exitWith(io, 1, `cannot read the mirror root ${root}: ${describe(error)}`));
  if (typeof info === "number") return info;
  if (info?.isDirectory) return null;
  const none = `there is no mirror at ${root}: nothing was mirrored there; the tap's startup block names its mirror root`;
  return exitWith(io, 1, info === null ? none : `the mirror root ${root} is not a directory`);
}

/** A table with a header, left-aligned first column(s) and right-aligned numbers; one line per row, header first. */
export function table(head: string[], rows: string[][], leftColumns: number[] = [0]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const left = new Set(leftColumns);
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 && left.has(i) ? c : left.has(i) ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ").trimEnd();
  return [line(head), ...rows.map(line)];
}
