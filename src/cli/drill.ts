// `sessiontap drill [SESSION…]` (docs/DESIGN.md "Drill"): proves each backed-up session resumes in the user's own Claude Code,
// one line per session and a summary; exit 0 all pass, 1 any fails, 2 a usage error or a session that does not match.
import { availableParallelism } from "node:os";
import process from "node:process";
import type { Config } from "../config/parse.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { LAST_DRILL, lastDrill as readLastDrill, type SessionSource } from "../storage/mirror-reader.ts";
import { join } from "../storage/paths.ts";
import { replaceFile } from "../storage/publish.ts";
import { scrubLine, terminalSafeJson } from "../transcript/records.ts";
import { oneLine } from "../transcript/records.ts";
import { type SessionData, summarize } from "../transcript/summary.ts";
import { buildTree } from "../transcript/tree.ts";
import { describe } from "../utils/describe-error.ts";
import { localDateTime } from "../utils/local-time.ts";
import { plural } from "../utils/plural.ts";
import type { CommandIo } from "./command-io.ts";
import type { Check } from "./doctor-check.ts";
import { ClaudeNotStarted, type DrillResult, drillSession } from "./drill-run.ts";
import { noMirror } from "./load.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const load = (data: SessionData) => {
  const tree = buildTree(data.records);
  return { data, tree, summary: summarize(data, tree) };
};

/** The sessions named (each must match one: else exit 2, named), or every one Claude Code could resume by its id, newest first. */
async function pick(config: Readonly<Config>, io: CommandIo, source: SessionSource) {
  if (config.positional.length === 0) {
    const all = (await source.loadAll()).map(load).sort((a, b) => (b.summary.lastTimestamp ?? "").localeCompare(a.summary.lastTimestamp ?? ""));
    const drillable = all.filter((s) => UUID.test(s.summary.sessionId ?? ""));
    return { sessions: drillable, skipped: all.length - drillable.length };
  }
  const sessions = new Map<string, ReturnType<typeof load>>();
  for (const query of config.positional) {
    const found = await source.lookup(query);
    if (found.kind !== "found") {
      const many = found.kind === "ambiguous"
        ? ` matches ${found.candidates.length} sessions (${found.candidates.slice(0, 5).join(", ")}…); give more of the id`
        : "";
      io.stderr(`sessiontap: drill: "${query}"${many || ` matches no session in ${sourceName(config)} (see sessiontap list)`}\n`);
      return 2;
    }
    sessions.set(found.data.dir, load(found.data));
  }
  return { sessions: [...sessions.values()], skipped: 0 };
}

/** The line of one drilled session: verdict, id, turns, title, and what passed or failed. */
function line(r: DrillResult): string {
  const title = r.title === null ? "" : `  ${oneLine(r.title, 60)}`;
  return scrubLine(`${r.ok ? "ok  " : "FAIL"}  ${r.sessionId}  ${plural(r.turns, "turn")}${title}: ${r.detail}`) + "\n";
}

/** Runs `drill`. */
export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const missing = await noMirror(config, io);
  if (missing !== null) return missing;
  return await withSessionSource(config, io.fs, async (source) => {
    const picked = await pick(config, io, source);
    if (typeof picked === "number") return picked;
    const { sessions, skipped } = picked;
    const stop = new AbortController();
    if (sessions.length === 0) return (io.stdout(config.json ? "[]\n" : `Nothing to drill in ${sourceName(config)}.\n`), 0);
    const setup = {
      fs: io.fs,
      program: io.env.SESSIONTAP_CLAUDE || "claude",
      env: io.env,
      timeoutMs: config.drillTimeoutMs,
      clock: io.clock,
      warn: (text: string) => io.stderr(text + "\n"),
      stop: stop.signal,
    };
    const results: DrillResult[] = [];
    const bar = io.isTTY && !config.json && sessions.length > 3;
    const progress = () => {
      const filled = Math.round((results.length / sessions.length) * 30);
      if (bar) io.stdout(`\r[${"#".repeat(filled)}${".".repeat(30 - filled)}] ${results.length}/${sessions.length}`);
    };
    let next = 0;
    let stopped: unknown = null;
    const worker = async () => {
      while (next < sessions.length && stopped === null && !stop.signal.aborted) {
        const session = sessions[next++];
        try {
          const result = await drillSession(session, setup);
          results.push(result);
          if (!config.json) io.stdout((bar ? "\r\x1b[K" : "") + line(result));
          progress();
        } catch (error) {
          stopped ??= error; // the others finish what they started: no child is left running
        }
      }
    };
    const jobs = Math.min(config.jobs ?? Math.min(availableParallelism(), 4), sessions.length);
    progress();
    const signals = process.platform === "win32" ? ["SIGINT", "SIGBREAK"] : ["SIGINT", "SIGTERM"];
    const onSignal = (signal: string) => stop.abort(signal);
    for (const signal of signals) process.on(signal, onSignal);
    await Promise.all(Array.from({ length: jobs }, worker)).finally(() => signals.forEach((signal) => process.off(signal, onSignal)));
    if (bar) io.stdout("\r\x1b[K");
    if (stopped instanceof ClaudeNotStarted) {
      const where = io.env.SESSIONTAP_CLAUDE ? "SESSIONTAP_CLAUDE" : "on PATH";
      io.stderr(`sessiontap: drill: ${stopped.message} (${where}): install Claude Code, or name it: SESSIONTAP_CLAUDE=/path/to/claude\n`);
      return 1;
    }
    if (stopped !== null) throw stopped;
    if (stop.signal.aborted) return (io.stderr(`sessiontap: drill stopped by ${stop.signal.reason} after ${plural(results.length, "session")}\n`), 1);
    const order = new Map(sessions.map((s, i) => [s.summary.sessionId, i]));
    results.sort((a, b) => order.get(a.sessionId)! - order.get(b.sessionId)!);
    const passed = results.filter((r) => r.ok).length;
    const claudeCode = results.find((r) => r.claudeCode !== null)?.claudeCode ?? null;
    if (config.json) io.stdout(terminalSafeJson(JSON.stringify(results, null, 2)) + "\n");
    else {
      const what = `${plural(results.length, "session")} drilled${claudeCode === null ? "" : ` with Claude Code ${claudeCode}`}`;
      const others = skipped === 0 ? "" : `; ${plural(skipped, "session")} without a Claude Code session id not drilled`;
      const failed = results.length - passed;
      const verdict = failed === 0 ? ": every one resumed whole" : `: ${passed} resumed whole, ${failed} did not (docs/recovery.md says what a failure means)`;
      io.stdout(`\n${what}${verdict}${others}.\n`);
    }
    const root = await io.fs.lstat(config.mirrorDir);
    if (root?.isDirectory) {
      const record = { at: new Date(io.clock()).toISOString(), drilled: results.length, passed, named: config.positional.length > 0, claudeCode };
      await replaceFile(io.fs, join(config.mirrorDir, LAST_DRILL), JSON.stringify(record) + "\n");
    }
    return passed === results.length ? 0 : 1;
  });
}

/** doctor's line about the last drill, when one ran. */
export async function lastDrill(config: Readonly<Config>, io: CommandIo): Promise<Check[]> {
  const path = join(config.mirrorDir, LAST_DRILL);
  let last;
  try {
    last = await readLastDrill(io.fs, config.mirrorDir);
  } catch (error) {
    return [{ check: "last drill", status: "warn", detail: `${path} could not be read (${describe(error)}): run sessiontap drill again` }];
  }
  if (last === null) return [];
  const by = last.claudeCode !== null ? ` by Claude Code ${last.claudeCode}` : "";
  const of = `${last.passed} of ${plural(last.drilled, "session")}${last.named ? " named" : ""} resumed whole${by}`;
  const fix = last.passed === last.drilled ? "" : ": sessiontap drill names what failed (docs/recovery.md)";
  return [{ check: "last drill", status: last.passed === last.drilled ? "ok" : "warn", detail: `${localDateTime(Date.parse(last.at), io.zone)}: ${of}${fix}` }];
}
