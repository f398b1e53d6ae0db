/** `sessiontap verify [--repair]`: the whole tree's health, per session (exit 1 when damage remains). */
import type { Config } from "../config/parse.ts";
import { DirLocks } from "../storage/dir-lock.ts";
import { ownerAlive, selfOwner } from "../storage/process-identity.ts";
import { describe } from "../utils/describe-error.ts";
import { verifyTree } from "../verify/verify-tree.ts";
import type { CommandIo } from "./command-io.ts";
import { noMirror } from "./load.ts";
import { terminalSafeJson } from "../transcript/records.ts";

/** Runs `verify`. */
export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const missing = await noMirror(config, io);
  if (missing !== null) return missing;
  const said = new Set<string>();
  const locks = new DirLocks(io.fs, config.mirrorDir, {
    self: selfOwner(io.fs),
    isAlive: (o) => ownerAlive(io.fs, o),
    waitMs: 10_000,
    clock: io.clock,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    report: {
      // Left behind, such a lock names a process that has ended by the time a tap looks: taken over then.
      releaseFailed: (dir, error) => {
        if (said.has(dir)) return;
        said.add(dir);
        io.stderr(`sessiontap: the writer lock of ${dir} could not be released (${describe(error)}); retried\n`);
      },
      allReleased: () => {},
    },
  });
  let reports;
  try {
    reports = await verifyTree(io.fs, config.mirrorDir, config.repair, locks);
  } finally {
    await locks.stop();
  }
  if (config.json) io.stdout(terminalSafeJson(JSON.stringify(reports, null, 2)) + "\n");
  else {
    for (const r of reports) {
      io.stdout(`${r.problems.length === 0 ? "ok     " : "DAMAGED"} ${r.session}\n`);
      for (const p of r.problems) io.stdout(`          problem: ${p}\n`);
      for (const p of r.repaired) io.stdout(`          repaired: ${p}\n`);
    }
    const damaged = reports.filter((r) => r.problems.length > 0).length;
    io.stdout(`${reports.length} session(s) checked, ${damaged} with problems${config.repair ? ` after repair` : ""}\n`);
  }
  return reports.some((r) => r.problems.length > 0) ? 1 : 0;
}
