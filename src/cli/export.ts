// `sessiontap export SESSION [--format md|html|jsonl] [--out FILE]`: to stdout, or to FILE replaced atomically, 0600 (a conversation is private).
import type { Config } from "../config/parse.ts";
import { exportText } from "../transcript/render.ts";
import { replaceFile } from "../storage/publish.ts";
import type { CommandIo } from "./command-io.ts";
import { findSession, priceTable } from "./load.ts";
import { absolute } from "../storage/paths.ts";

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const prices = await priceTable(config, io);
  if (typeof prices === "number") return prices;
  const found = await findSession(config, io, prices);
  if (typeof found === "number") return found;
  const text = exportText({ records: found.data.records, tree: found.tree, summary: found.summary }, config.format, prices);
  if (config.out === null || config.out === "-") {
    io.stdout(text);
    return 0;
  }
  const path = absolute(config.out, io.cwd);
  const info = await io.fs.lstat(path);
  if (info !== null && !info.isFile) {
    io.stderr(`sessiontap: --out ${path} exists and is not a regular file; nothing written\n`);
    return 1;
  }
  try {
    await replaceFile(io.fs, path, text);
  } catch (error) {
    io.stderr(`sessiontap: cannot write ${path}: ${(error as Error).message.split("\n")[0]}\n`);
    return 1;
  }
  io.stderr(`sessiontap: wrote ${found.summary.sessionId ?? found.summary.dir} as ${config.format} to ${path}\n`);
  return 0;
}
