// `sessiontap doctor`: what makes a user lose a transcript or bypass the tap, each ok / warn / FAIL with what to do; exit 1 on a failure.
// The tap and the way Claude Code reaches it are doctor-route.ts; here the mirror root, retention and the transcripts.
import { join } from "node:path/posix";
import type { Config } from "../config/parse.ts";
import { SessionCatalog } from "../storage/mirror-reader.ts";
import { untrusted } from "../storage/trusted-path.ts";
import { scrubLine, terminalSafeJson } from "../transcript/records.ts";
import { lackingWords } from "../transcript/transcript-state.ts";
import { bytesShort } from "../usage/tokens.ts";
import { describe } from "../utils/describe-error.ts";
import { lastDrill } from "./drill.ts";
import { plural } from "../utils/plural.ts";
import type { CommandIo } from "./command-io.ts";
import { alertedSessions, type Check, type SettingsFile, settingsFiles, tapAndRoute, verdict } from "./doctor-route.ts";

const MIB = 1024 * 1024;
/** Sessions younger than this count as recent; Claude Code's default cleanup. */
const RECENT_DAYS = 30;
/** From here on a `cleanupPeriodDays` has been seen ignored (transcripts deleted at 30 days anyway). */
const VERY_LARGE_DAYS = 10_000;

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const settings = await settingsFiles(config, io);
  const tap = await tapAndRoute(config, io, settings);
  const checks = [
    ...(await mirrorRoot(config, io)),
    ...tap.checks,
    ...retention(config, settings),
    ...(await transcriptChecks(config, io, alertedSessions(tap.health))),
    ...(await lastDrill(config, io)),
  ];
  const fails = checks.filter((c) => c.status === "fail").length;
  const warns = checks.filter((c) => c.status === "warn").length;
  if (config.json) io.stdout(terminalSafeJson(JSON.stringify(checks, null, 2)) + "\n");
  else {
    const width = Math.max(...checks.map((c) => c.check.length));
    const lines = checks.map((c) => `${c.status === "fail" ? "FAIL" : c.status.padEnd(4)}  ${c.check.padEnd(width)}  ${c.detail}`);
    lines.push("", fails === 0 && warns === 0 ? "All checks passed." : `${plural(fails, "problem")}, ${plural(warns, "warning")}.`);
    io.stdout(lines.join("\n") + "\n");
  }
  return fails > 0 ? 1 : 0;
}

/** The mirror root: a real directory of this user's, private, writable, with free space, nothing planted in it. */
async function mirrorRoot(config: Readonly<Config>, io: CommandIo): Promise<Check[]> {
  const root = config.mirrorDir;
  const say = (status: Check["status"], detail: string) => verdict("mirror root", status, `${root} ${detail}`);
  const info = await io.fs.lstat(root);
  if (info === null) return [say("warn", "does not exist yet (the tap creates it, 0700, on its first write)")];
  if (info.isSymbolicLink) return [say("fail", "is a symbolic link; the tap refuses it: point --mirror-dir / SESSIONTAP_MIRROR_DIR at the real directory")];
  if (!info.isDirectory) return [say("fail", "is not a directory")];
  const mode = (info.mode & 0o777).toString(8).padStart(3, "0");
  const why = untrusted(info, "directory");
  if (why?.startsWith("belongs")) {
    return [say("fail", `${why}: the tap refuses it (serve exits 2); point --mirror-dir / SESSIONTAP_MIRROR_DIR at a directory of your own`)];
  }
  const out: Check[] = [];
  if (why !== null) out.push(say("fail", `${why}: the tap refuses it (serve exits 2), since others could read or plant conversations; chmod 700 ${root}`));
  else if (io.fs.posixModes !== false && (info.mode & 0o077) !== 0) {
    out.push(say("warn", `is mode ${mode}: other users can read conversations; chmod 700 ${root}`));
  }
  out.push(...(await plantedEntries(io, root)));
  const probe = join(root, `.sessiontap-doctor-${crypto.randomUUID().slice(0, 8)}`);
  const code = (error: unknown) => (error as { code?: string }).code ?? (error as Error).message;
  try {
    await io.fs.createExclusive(probe, "", false);
    await io.fs.unlink(probe);
  } catch (error) {
    out.push(say("fail", `is not writable (${code(error)}): the tap cannot mirror`));
  }
  try {
    const { freeBytes } = await io.fs.statfs(root);
    const status = freeBytes < 100 * MIB ? "fail" : freeBytes < 1024 * MIB ? "warn" : "ok";
    out.push(verdict("free space", status, `${bytesShort(freeBytes)} free for ${root}${status === "ok" ? "" : ": a full disk stops the mirror"}`));
  } catch (error) {
    out.push(verdict("free space", "warn", `could not tell (${code(error)})`));
  }
  if (!out.some((c) => c.check === "mirror root")) out.unshift(say("ok", `(mode ${mode}, writable)`));
  return out;
}

/** What the tap would refuse at write time in the tree's first two levels: another user's, open to others, or a link. */
async function plantedEntries(io: CommandIo, root: string): Promise<Check[]> {
  const found: string[] = [];
  const look = async (path: string, depth: number): Promise<void> => {
    for (const entry of await io.fs.readdir(path)) {
      const child = join(path, entry.name);
      const info = found.length >= 5 ? null : await io.fs.lstat(child);
      const why = info === null ? null : info.isSymbolicLink ? "is a symbolic link" : untrusted(info, info.isDirectory ? "directory" : "file");
      if (why !== null) found.push(`${child} ${why}`);
      else if (info?.isDirectory && depth < 1) await look(child, depth + 1);
    }
  };
  try {
    await look(root, 0);
  } catch (error) {
    return [verdict("mirror tree", "warn", `could not look through ${root} (${describe(error)})`)];
  }
  if (found.length === 0) return [];
  const what = found.join("; ") + (found.length >= 5 ? "; …" : "");
  const why = `the tap refuses to write into ${what}: the mirror did not put them there — look at them, then remove them (or chmod go-w what is yours)`;
  return [verdict("mirror tree", "fail", why)];
}

/** Claude Code's `cleanupPeriodDays` and the mirror's retention against it: a mirror deleting no later keeps no copy past it. */
function retention(config: Readonly<Config>, settings: SettingsFile[]): Check[] {
  const found = settings.find((s) => s.json?.cleanupPeriodDays !== undefined);
  const days = found?.json?.cleanupPeriodDays;
  const keep = config.retentionDays;
  const net = `The mirror is the safety net: ${
    keep === 0
      ? "SESSIONTAP_RETENTION_DAYS=0 (the default), it keeps every session"
      : `SESSIONTAP_RETENTION_DAYS=${keep}, it keeps sessions ${keep} days (set it higher, or 0 to keep them all)`
  }`;
  const usable = typeof days === "number" && Number.isInteger(days) && days >= 1;
  const file = join(config.claudeDir, "settings.json");
  const cleanup = verdict(
    "cleanupPeriodDays",
    found !== undefined && usable && days >= RECENT_DAYS && days < VERY_LARGE_DAYS ? "ok" : "warn",
    found === undefined
      ? `not set: Claude Code deletes transcripts older than 30 days when it starts; to keep them, set "cleanupPeriodDays": 3650 in ${file}. ${net}`
      : !usable
      ? `${JSON.stringify(days)} in ${found.path} is not a whole number of days ≥ 1; Claude Code rejects it`
      : days < RECENT_DAYS
      ? `${days} (${found.path}): Claude Code deletes transcripts older than ${days} days when it starts. ${net}`
      : days >= VERY_LARGE_DAYS
      ? `${days} (${found.path}): Claude Code has been seen to ignore very large values and delete transcripts after 30 days anyway; 3650 keeps them ten years. ${net}`
      : `${days} days (${found.path})`,
  );
  const after = usable && days < VERY_LARGE_DAYS ? days : 30;
  const mirror = verdict(
    "mirror retention",
    keep !== 0 && keep <= after ? "warn" : "ok",
    keep === 0
      ? "off (the default): the mirror keeps every session, those Claude Code's cleanup deleted included (list shows them missing; sessiontap restore ID brings one back)"
      : keep <= after
      ? `SESSIONTAP_RETENTION_DAYS=${keep}: the mirror deletes a session after ${keep} days, no later than Claude Code's cleanup deletes its transcript (${after} days), so no copy outlives it; unset it to keep every session, or set it well past ${after}`
      : `SESSIONTAP_RETENTION_DAYS=${keep}: the mirror keeps sessions ${keep} days, past Claude Code's cleanup (${after})`,
  );
  return [cleanup, mirror];
}

/** Recent sessions whose transcript the one judge finds missing, a stub, behind or torn; one the guard `alerted` of is said there. */
async function transcriptChecks(config: Readonly<Config>, io: CommandIo, alerted: ReadonlySet<string>): Promise<Check[]> {
  const since = io.clock() - RECENT_DAYS * 86_400_000;
  const judged = await new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir, undefined, undefined, io.clock).judged();
  const sessions = judged.filter(({ entry: s }) =>
    s.sessionId !== null && Date.parse(s.lastTimestamp ?? "") >= since && s.counts.prompts + s.counts.answers > 0 && !alerted.has(s.sessionId)
  );
  const out: Check[] = [];
  const say = (status: Check["status"], detail: string) => out.push(verdict("transcripts", status, detail));
  const odd = sessions.filter((s) => s.entry.claudeTranscriptProblem !== null);
  if (odd.length > 0) {
    say(
      "warn",
      `${plural(odd.length, "mirrored session has an id", "mirrored sessions have ids")} Claude Code could not have made (${
        odd[0].entry.dir
      }…): readable with show/export, not restorable`,
    );
  }
  for (const { entry: s } of sessions.filter((x) => x.entry.claudeTranscriptWarning !== null).slice(0, 20)) {
    say(
      "warn",
      `${s.sessionId}: ${
        scrubLine(s.claudeTranscriptWarning!)
      } — where Claude Code keeps its transcript; move it away, then: sessiontap restore ${s.sessionId}`,
    );
  }
  const plain = sessions.filter((x) => x.entry.claudeTranscriptProblem === null && x.entry.claudeTranscriptWarning === null);
  for (const { entry: s, info } of plain.filter((x) => x.info.state !== "intact").slice(0, 20)) {
    const where = `${s.sessionId} (${s.lastTimestamp}, ${s.cwd === null ? "cwd unknown" : scrubLine(s.cwd)}): Claude Code's transcript`;
    const restore = `sessiontap restore ${s.sessionId}${s.cwd === null ? " --cwd DIR (the directory you run claude in)" : ""}`;
    if (info.state === "behind") {
      const lacks = lackingWords(info.verdict.lacking);
      say(
        "fail",
        `${where} is behind the mirror: it lacks ${lacks} of the session's current branch (cut, or deleted and started afresh); quit Claude Code, then: ${restore} (a backup is kept)`,
      );
    } else say(info.state === "stub" ? "fail" : "warn", `${where} is ${info.state === "stub" ? "a stub" : "missing"}; restore it: ${restore}`);
  }
  for (const { entry: s, info } of plain.filter((x) => x.info.state === "intact").slice(0, 20)) {
    const force = `sessiontap restore ${s.sessionId} --force`;
    if (info.verdict.lacking.prompts + info.verdict.lacking.answers > 0) {
      const extra = plural(info.verdict.extra, "prompt or answer", "prompts or answers");
      say(
        "warn",
        `${s.claudeTranscriptPath} lacks ${
          lackingWords(info.verdict.lacking)
        } of the mirror's current branch but holds ${extra} the mirror does not: compare with sessiontap show ${s.sessionId}; ${force} replaces it (a backup is kept)`,
      );
    } else if (info.facts?.torn) {
      say(
        "warn",
        `${s.claudeTranscriptPath} ends in a torn line (a record cut off mid-write; the next one Claude Code appends is lost with it); quit Claude Code, then: ${force} (a backup is kept)`,
      );
    }
  }
  if (out.length === (odd.length > 0 ? 1 : 0)) {
    say("ok", `Claude Code's transcript is whole for all ${plural(sessions.length - odd.length, "session")} mirrored in the last ${RECENT_DAYS} days`);
  }
  return out;
}
