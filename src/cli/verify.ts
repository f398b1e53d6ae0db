// `sessiontap verify [--repair]`: each session's files in its own directory, no torn, unreadable or doubled line, every parent present,
// modes 0700/0600, no symlink; `--repair` fixes what it can without losing a byte, under each directory's writer lock.
import { join } from "node:path/posix";
import type { Config } from "../config/parse.ts";
import { jsonObject } from "../protocol/json.ts";
import { dirName } from "../protocol/session-id.ts";
import { DirLocks, removeLeftovers, writerTag } from "../storage/dir-lock.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { conversations } from "../storage/mirror-reader.ts";
import { checkWhole } from "../storage/publish.ts";
import { untrusted } from "../storage/trusted-path.ts";
import { describe } from "../utils/describe-error.ts";
import { type CommandIo, printJson } from "./command-io.ts";

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const said = new Set<string>();
  const locks = new DirLocks(io.fs, config.mirrorDir, {
    waitMs: 10_000,
    clock: io.clock,
    report: {
      // Left behind, such a lock names a process that has ended by the time a tap looks: taken over then.
      releaseFailed: (dir, error) => {
        if (!said.has(dir)) io.stderr(`sessiontap: the writer lock of ${dir} could not be released (${describe(error)}); retried\n`);
        said.add(dir);
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
  if (config.json) printJson(io, reports);
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

type SessionReport = { session: string; problems: string[]; repaired: string[] };

type Rec = Record<string, unknown>;
/** A conversation directory as the mirror reader walks it; a side exchange's parents may also be in the session's main one. */
type ConvDir = Awaited<ReturnType<typeof conversations>>["dirs"][number];

async function verifyTree(fs: FsAdapter, root: string, repair: boolean, locks: DirLocks): Promise<SessionReport[]> {
  const reports: SessionReport[] = [];
  for (const e of (await fs.readdir(root)).sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.name.startsWith(".") || (!e.isDirectory && !e.isSymbolicLink)) continue;
    const report: SessionReport = { session: e.name, problems: [], repaired: [] };
    reports.push(report);
    if (e.isSymbolicLink) {
      report.problems.push("the session directory is a symbolic link (never followed)");
      continue;
    }
    const session = join(root, e.name);
    const walk = await conversations(fs, session);
    for (const link of walk.links) report.problems.push(`${link} is a symbolic link (never followed)`);
    const uuids = new Map<string, Set<string>>();
    const all: { dir: ConvDir; records: Rec[] }[] = [];
    for (const dir of walk.dirs) {
      if (!(await checkEntry(fs, dir.path, "directory", repair, report))) continue;
      const release = repair ? await locks.acquire(dir.path) : async () => {};
      try {
        const records = await verifyDir(fs, dir, e.name, repair, report);
        all.push({ dir, records });
        uuids.set(dir.path, new Set(records.map((r) => String(r.uuid))));
      } finally {
        await release();
      }
    }
    for (const { dir, records } of all) {
      const known = new Set([...(uuids.get(dir.path) ?? []), ...(dir.scope === "side" ? (uuids.get(session) ?? []) : [])]);
      const broken = records.filter((r) => typeof r.parentUuid === "string" && !known.has(r.parentUuid)).length;
      const where = dir.path === session ? "." : dir.path.slice(session.length + 1);
      if (broken > 0) report.problems.push(`${where}: ${broken} record(s) whose parent is missing`);
    }
  }
  return reports;
}

/** False (a problem reported) when `path` is another user's: planted, so never read as the session's nor repaired; else its mode is checked. */
async function checkEntry(fs: FsAdapter, path: string, want: "directory" | "file", repair: boolean, report: SessionReport): Promise<boolean> {
  const info = await fs.lstat(path);
  if (info === null) return true;
  const name = path.slice(path.lastIndexOf("/") + 1);
  const why = untrusted(info, want);
  if (why?.startsWith("belongs")) {
    report.problems.push(`${name} ${why}: not the tap's; the tap refuses to write there (look at it, then remove it)`);
    return false;
  }
  const mode = want === "directory" ? 0o700 : 0o600;
  if (fs.posixModes === false || (info.mode & 0o777) === mode) return true;
  const what = `${name} has mode ${(info.mode & 0o777).toString(8)}, not ${mode.toString(8)}`;
  if (repair) await fs.chmod(path, mode);
  (repair ? report.repaired : report.problems).push(what);
  return true;
}

type Sorted = { keep: string[]; torn: string[]; dup: string[]; tornTail: boolean };

/** Moves unreadable lines and duplicates aside (fsynced), then replaces the file by rename once the rewrite is whole on disk. */
async function repairFile(fs: FsAdapter, path: string, sorted: Sorted): Promise<void> {
  if (sorted.torn.length > 0) await fs.append(`${path}.torn`, sorted.torn.join("\n") + "\n", true);
  if (sorted.dup.length > 0) await fs.append(`${path}.dup`, sorted.dup.join("\n") + "\n", true);
  const aside = `${path}.repair-${await writerTag(fs)}`;
  const text = sorted.keep.map((l) => l + "\n").join("");
  if (!(await fs.createExclusive(aside, text, true))) throw new Error(`${aside} is in the way (remove it, then repair again)`);
  try {
    await checkWhole(fs, aside, text);
    await fs.rename(aside, path);
  } catch (error) {
    await fs.unlink(aside).catch(() => undefined);
    throw error;
  }
}

async function verifyDir(fs: FsAdapter, dir: ConvDir, sessionName: string, repair: boolean, report: SessionReport): Promise<Rec[]> {
  const out: Rec[] = [];
  const seen = new Map<string, string>(); // uuid → line, across the directory
  const agentDir = dir.agent?.replace(/^agent-/, "") ?? null;
  /** A file's lines to keep, unreadable ones and exact duplicates; its records go to `out`. */
  const sortLines = (text: string, name: string) => {
    const sorted: Sorted = { keep: [], torn: [], dup: [], tornTail: !text.endsWith("\n") && text.length > 0 };
    const lines = text.split("\n");
    lines.forEach((line, i) => {
      if (line === "" && i === lines.length - 1) return;
      const r = jsonObject(line);
      if (r === null) return void sorted.torn.push(line);
      const uuid = String(r.uuid);
      if (seen.has(uuid)) {
        if (seen.get(uuid) === line) return void sorted.dup.push(line);
        report.problems.push(`${name}: two different records share uuid ${uuid}`);
        return void sorted.keep.push(line);
      }
      seen.set(uuid, line);
      sorted.keep.push(line);
      out.push(r);
      const id = typeof r.sessionId === "string" ? r.sessionId : null;
      if (dirName(id) !== sessionName) report.problems.push(`${name}: a record of session ${JSON.stringify(id).slice(0, 60)} is misplaced here`);
      else if (agentDir !== null && dirName(typeof r.agentId === "string" ? r.agentId : null) !== agentDir) {
        report.problems.push(`${name}: a record of another agent is misplaced here`);
      }
    });
    return sorted;
  };
  const entries = await fs.readdir(dir.path);
  // What a repair killed part-way left (docs/RELIABILITY.md "Trust boundaries"): told, and removed by --repair once provably stale.
  const isLeftover = (name: string) => /\.jsonl\.repair-/.test(name);
  const removed = repair ? await removeLeftovers(fs, dir.path, isLeftover, Date.now()) : [];
  for (const name of removed) report.repaired.push(`${name}: the leftover of an interrupted repair, removed`);
  for (const f of entries.filter((e) => e.isFile && isLeftover(e.name) && !removed.includes(e.name))) {
    report.problems.push(`${f.name}: the leftover of an interrupted repair (verify --repair removes it once its writer is gone)`);
  }
  for (const f of entries.filter((f) => f.name.endsWith(".jsonl")).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir.path, f.name);
    if (f.isSymbolicLink) {
      report.problems.push(`${f.name} is a symbolic link (never followed)`);
      continue;
    }
    if (!(await checkEntry(fs, path, "file", repair, report))) continue;
    const sorted = sortLines(await fs.readText(path), f.name);
    const unreadable = sorted.torn.length - (sorted.tornTail ? 1 : 0);
    const issues = [
      sorted.tornTail ? "a torn final line" : null,
      unreadable > 0 ? `${unreadable} unreadable line(s)` : null,
      sorted.dup.length > 0 ? `${sorted.dup.length} duplicated record(s)` : null,
    ].filter((x) => x !== null);
    if (issues.length === 0) continue;
    const what = `${f.name}: ${issues.join(", ")}`;
    if (!repair) report.problems.push(what);
    else {
      await repairFile(fs, path, sorted).then(
        () => report.repaired.push(what + " (moved aside)"),
        (error) => report.problems.push(`${what}; not repaired (${describe(error)}): the file is as it was`),
      );
    }
  }
  return out;
}
