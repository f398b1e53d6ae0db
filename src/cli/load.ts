/**
 * What a reading command loads before it does anything: the session its argument names (from the tree or
 * the shared store) and the price table. Each is the thing, or an exit status once stderr says why.
 */
import { type Config, settingName } from "../config/parse.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { loadPrices, type PriceTable } from "../usage/prices.ts";
import { type SessionData, type SessionSummary, summarize } from "../transcript/summary.ts";
import { buildTree, type Tree } from "../transcript/tree.ts";
import { describe } from "../utils/describe-error.ts";
import type { CommandIo } from "./command-io.ts";

/** The price table (SESSIONTAP_PRICES over the built-in one), or, when the file is unusable, says so and returns exit status 1. */
export async function priceTable(config: Readonly<Config>, io: CommandIo): Promise<PriceTable | number> {
  try {
    return await loadPrices(io.fs, config.prices);
  } catch (error) {
    io.stderr(`sessiontap: ${(error as Error).message}\n`);
    return 1;
  }
}

/** One session, read and indexed. */
export interface LoadedSession {
  data: SessionData;
  tree: Tree;
  summary: SessionSummary;
}

/**
 * Finds the session named by the command's first argument (an id, a directory name, or a unique prefix),
 * or writes why not to stderr and returns the exit status: 2 without an argument, 1 when none or several
 * match.
 */
export async function findSession(config: Readonly<Config>, io: CommandIo, prices?: PriceTable): Promise<LoadedSession | number> {
  const query = config.positional[0];
  const missing = await noMirror(config, io);
  if (missing !== null) return missing;
  // The shared store when one is configured (docs/DESIGN.md "The shared store"), else the mirror tree.
  const found = await withSessionSource(config, io.fs, (source) => source.lookup(query));
  if (found.kind === "none") {
    io.stderr(`sessiontap: no mirrored session matches "${query}" in ${sourceName(config)} (see sessiontap list)\n`);
    return 1;
  }
  if (found.kind === "ambiguous") {
    const shown = found.candidates.slice(0, 10).join(", ");
    io.stderr(
      `sessiontap: "${query}" matches ${found.candidates.length} sessions (${shown}${found.candidates.length > 10 ? ", …" : ""}); give more of the id\n`,
    );
    return 1;
  }
  const tree = buildTree(found.data.records);
  return { data: found.data, tree, summary: summarize(found.data, tree, prices) };
}

/**
 * When the command reads the tree and there is no mirror at its root: says so (naming the setting that
 * chose the root) and returns exit status 1; else null. An empty listing would look like "nothing was
 * ever mirrored" when the root is simply the wrong one.
 */
export async function noMirror(config: Readonly<Config>, io: CommandIo): Promise<number | null> {
  if (config.store !== null) return null;
  let info;
  try {
    info = await io.fs.lstat(config.mirrorDir);
  } catch (error) {
    io.stderr(`sessiontap: cannot read the mirror root ${config.mirrorDir} (${settingName(config, "mirrorDir")}): ${describe(error)}\n`);
    return 1;
  }
  if (info !== null && info.isDirectory) return null;
  io.stderr(
    info === null
      ? `sessiontap: there is no mirror at ${config.mirrorDir} (${
        settingName(config, "mirrorDir")
      }): nothing was mirrored there; the tap's startup block names its mirror root\n`
      : `sessiontap: the mirror root ${config.mirrorDir} (${settingName(config, "mirrorDir")}) is not a directory\n`,
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
