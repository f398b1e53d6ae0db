// `sessiontap export SESSION [--format md|html|jsonl] [--out FILE]`: to stdout, or to FILE replaced atomically, 0600 (a conversation is private).
import { resolve } from "node:path/posix";
import type { Config } from "../config/parse.ts";
import { exportSession } from "../transcript/render.ts";
import { rootRedactor } from "../storage/binding-files.ts";
import { replaceFile } from "../storage/publish.ts";
import { type CommandIo, findSession, priceTable } from "./command-io.ts";

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const prices = await priceTable(config, io);
  if (typeof prices === "number") return prices;
  const found = await findSession(config, io, prices);
  if (typeof found === "number") return found;
  const redactor = config.noRedact || config.redact === "off" ? null : await rootRedactor(io.fs, config.mirrorDir);
  const text = await exportSession(found.data, config.format, prices, redactor);
  if (config.out === null || config.out === "-") {
    io.stdout(text);
    return 0;
  }
  const path = resolve(io.cwd, config.out);
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
