/**
 * `sessiontap serve` as a child process whose engine writes to a nearly full disk (short-disk.ts), for what
 * only another process can show: a spool a later start adopts is one whose writer is dead. The rules come
 * from SHORT_DISK, a JSON list of `{ "includes": "/part/of/a/path/", "room": bytes, "full"?: Full }`, set
 * before the tap prints its URL as serve does; it stops on SIGTERM, and prints what the stop did with
 * unwritten commits as one JSON line on stderr (`unwritten {...}`).
 */
import process from "node:process";
import { parseConfig } from "../../src/config/parse.ts";
import { startTap } from "../../src/cli/start-tap.ts";
import { type Full, shortEngineDisk } from "./short-disk.ts";

const disk = shortEngineDisk();
const config = parseConfig(["serve", "--port", "0", ...process.argv.slice(2)], process.env, process.env.HOME ?? "/");
const tap = await startTap(config, { engineSeams: disk.seams, stderr: (line) => void process.stderr.write(line + "\n") });
for (const rule of JSON.parse(process.env.SHORT_DISK ?? "[]") as { includes: string; room: number; full?: Full }[]) {
  await disk.fill(rule.includes, rule.room, rule.full);
}
process.stdout.write(`  export ANTHROPIC_BASE_URL=${tap.url}\n`);
await new Promise((resolve) => process.once("SIGTERM", resolve));
const unwritten = await tap.stop();
process.stderr.write(`unwritten ${JSON.stringify(unwritten)}\n`, () => process.exit(0));
