// `sessiontap restore SESSION …`: restore/restore-session.ts plans and writes (the viewer's "Restore into Claude Code" runs the same); this prints.
import { resolve } from "node:path/posix";
import type { Config } from "../config/parse.ts";
import { describeRestore, restoreSession } from "../restore/restore-session.ts";
import { type CommandIo, findSession } from "./command-io.ts";
import { terminalSafeJson } from "../transcript/records.ts";

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const found = await findSession(config, io);
  if (typeof found === "number") return found;
  const cwd = config.cwd === null ? null : resolve(io.cwd, config.cwd);
  // A typo in --cwd would put the transcript where no `claude` ever runs: say so, then do as asked.
  const there = cwd === null ? null : await io.fs.lstat(cwd);
  if (cwd !== null && (there === null || !there.isDirectory)) {
    io.stderr(
      `sessiontap: note: ${cwd} (--cwd) ${there === null ? "does not exist" : "is not a directory"}; the transcript ${
        config.dryRun ? "would be" : "is"
      } written for it all the same, and Claude Code finds it when claude --resume runs in that directory\n`,
    );
  }
  const result = await restoreSession(io.fs, { ...found, others: found.data }, {
    claudeDir: config.claudeDir,
    cwd,
    dryRun: config.dryRun,
    force: config.force,
    now: io.clock(),
  });
  if (config.json && result.outcome !== null) io.stdout(terminalSafeJson(JSON.stringify(result.outcome, null, 2)) + "\n");
  if (!result.ok) {
    io.stderr(`sessiontap: ${result.why}\n${result.hint === undefined ? "" : `  ${result.hint}\n`}`);
    return 1;
  }
  if (!config.json) io.stdout(describeRestore(result.outcome).join("\n") + (config.dryRun ? "\nNothing written (--dry-run).\n" : "\n"));
  for (const problem of result.problems) io.stderr(`sessiontap: ${problem}\n`);
  return result.problems.length > 0 ? 1 : 0;
}
