/**
 * `sessiontap doctor`: checks what makes a user lose a transcript or bypass the tap, each as ok / warn /
 * FAIL with what to do; exit 1 when any check fails.
 *
 * - the mirror root: a real directory of this user's, private (0700), writable, with free space; and
 *   nothing in its top levels that the tap would refuse (another user's, open to others, a link);
 * - the tap Claude Code uses (`--url` / `--port` name another) and its health (cli/doctor-tap.ts);
 * - the way Claude Code reaches it, as its settings and environment say (cli/doctor-route.ts): the base
 *   URL of the API it talks to (Anthropic's, Vertex AI's or Bedrock's), which must be a tap, or
 *   `HTTPS_PROXY` and `NODE_EXTRA_CA_CERTS`, which must be the tap's proxy and CA (cli/doctor-proxy.ts);
 * - Claude Code's `cleanupPeriodDays` against the mirror's retention (cli/doctor-retention.ts);
 * - recent sessions whose Claude Code transcript is a stub, missing, behind the mirror or torn, and the
 *   guard's state and alerts (cli/doctor-transcripts.ts), each with the command that fixes it.
 */
import type { Config } from "../config/parse.ts";
import { untrusted } from "../storage/trusted-path.ts";
import type { CommandIo } from "./command-io.ts";
import { bytesShort } from "../usage/tokens.ts";
import { alertedSessions, type Check, type SettingsFile, settingsFiles } from "./doctor-check.ts";
import { lackingWords } from "../transcript/transcript-state.ts";
import { SessionCatalog } from "../storage/mirror-reader.ts";
import { scrubLine } from "../transcript/records.ts";
import { describe } from "../utils/describe-error.ts";
import { claudeRoute, routeChecks, safeOrigin } from "./doctor-route.ts";
import { tapChecks } from "./doctor-tap.ts";
import { join } from "../storage/paths.ts";
import { plural } from "../utils/plural.ts";
import { terminalSafeJson } from "../transcript/records.ts";

export type { Check };

const MIB = 1024 * 1024;

/** Runs `doctor`. */
export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const settings = await settingsFiles(config, io); // read once: two checks look at them
  const tap = await tapAndRoute(config, io, settings);
  const checks = [
    ...(await mirrorRoot(config, io)),
    ...tap.checks,
    ...cleanupPeriod(config, settings),
    ...retention(config, settings),
    ...(await transcriptChecks(config, io, alertedSessions(tap.health))),
  ];
  const fails = checks.filter((c) => c.status === "fail").length;
  const warns = checks.filter((c) => c.status === "warn").length;
  if (config.json) {
    io.stdout(terminalSafeJson(JSON.stringify(checks, null, 2)) + "\n");
  } else {
    const width = Math.max(...checks.map((c) => c.check.length));
    const lines = checks.map((c) => `${c.status === "fail" ? "FAIL" : c.status.padEnd(4)}  ${c.check.padEnd(width)}  ${c.detail}`);
    lines.push("", fails === 0 && warns === 0 ? "All checks passed." : `${plural(fails, "problem")}, ${plural(warns, "warning")}.`);
    io.stdout(lines.join("\n") + "\n");
  }
  return fails > 0 ? 1 : 0;
}

/** The mirror root: kind, mode, writability, free space. */
async function mirrorRoot(config: Readonly<Config>, io: CommandIo): Promise<Check[]> {
  const root = config.mirrorDir;
  const check = "mirror root";
  const info = await io.fs.lstat(root);
  if (info === null) return [{ check, status: "warn", detail: `${root} does not exist yet (the tap creates it, 0700, on its first write)` }];
  if (info.isSymbolicLink) {
    return [{
      check,
      status: "fail",
      detail: `${root} is a symbolic link; the tap refuses it: point --mirror-dir / SESSIONTAP_MIRROR_DIR at the real directory`,
    }];
  }
  if (!info.isDirectory) return [{ check, status: "fail", detail: `${root} is not a directory` }];
  const out: Check[] = [];
  const mode = (info.mode & 0o777).toString(8).padStart(3, "0");
  const why = untrusted(info, "directory");
  if (why !== null && why.startsWith("belongs")) {
    return [{
      check,
      status: "fail",
      detail: `${root} ${why}: the tap refuses it (serve exits 2); point --mirror-dir / SESSIONTAP_MIRROR_DIR at a directory of your own`,
    }];
  }
  if (why !== null) {
    out.push({
      check,
      status: "fail",
      detail: `${root} ${why}: the tap refuses it (serve exits 2), since others could read or plant conversations; chmod 700 ${root}`,
    });
  } else if (io.fs.posixModes !== false && (info.mode & 0o077) !== 0) {
    out.push({ check, status: "warn", detail: `${root} is mode ${mode}: other users can read conversations; chmod 700 ${root}` });
  }
  out.push(...(await plantedEntries(io, root)));
  const probe = join(root, `.sessiontap-doctor-${crypto.randomUUID().slice(0, 8)}`);
  try {
    await io.fs.createExclusive(probe, "", false);
    await io.fs.unlink(probe);
  } catch (error) {
    out.push({
      check,
      status: "fail",
      detail: `${root} is not writable (${(error as { code?: string }).code ?? (error as Error).message}): the tap cannot mirror`,
    });
  }
  try {
    const { freeBytes } = await io.fs.statfs(root);
    const status = freeBytes < 100 * MIB ? "fail" : freeBytes < 1024 * MIB ? "warn" : "ok";
    out.push({ check: "free space", status, detail: `${bytesShort(freeBytes)} free for ${root}${status === "ok" ? "" : ": a full disk stops the mirror"}` });
  } catch (error) {
    out.push({ check: "free space", status: "warn", detail: `could not tell (${(error as { code?: string }).code ?? (error as Error).message})` });
  }
  if (!out.some((c) => c.check === check)) out.unshift({ check, status: "ok", detail: `${root} (mode ${mode}, writable)` });
  return out;
}

/**
 * The tap Claude Code would use (or the one `--url` / `--port` names), what its health says, and the way
 * Claude Code will really reach it.
 */
async function tapAndRoute(
  config: Readonly<Config>,
  io: CommandIo,
  settings: SettingsFile[],
): Promise<{ checks: Check[]; health: Record<string, unknown> | null }> {
  const out: Check[] = [];
  for (const s of settings) if (s.error !== null) out.push({ check: "claude settings", status: "warn", detail: `${s.path} could not be read: ${s.error}` });
  const route = claudeRoute(settings, io.env);
  const base = route.base;
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host === "::" ? "::1" : config.host;
  const defaultTap = `http://${host.includes(":") ? `[${host}]` : host}:${config.port}`;
  const [tapUrl, chosen] = config.url !== null
    ? [config.url.replace(/\/+$/, ""), "--url"]
    : config.sources.port === "flag"
    ? [`http://127.0.0.1:${config.port}`, "--port"]
    : base !== null && safeOrigin(base.value) !== null
    ? [safeOrigin(base.value)!, `${route.baseVar} ${base.where}`]
    : [defaultTap, "the default address"];
  const tap = await tapChecks(config, io, tapUrl, chosen);
  out.push(...tap.checks, ...(await routeChecks(route, settings, io, { url: tapUrl, probe: tap.tap }, config.token, config.claudeDir)));
  return { checks: out, health: tap.tap.ok ? tap.tap.health : null };
}

/** From here on, a `cleanupPeriodDays` is "very large": values like 99999 have been reported ignored (transcripts deleted at 30 days anyway). */
const VERY_LARGE_DAYS = 10_000;

/** Claude Code's transcript retention. */
export function cleanupPeriod(config: Readonly<Config>, settings: SettingsFile[]): Check[] {
  const found = settings.find((s) => s.json !== null && s.json.cleanupPeriodDays !== undefined);
  const check = "cleanupPeriodDays";
  const file = join(config.claudeDir, "settings.json");
  if (found === undefined) {
    return [{
      check,
      status: "warn",
      detail: `not set: Claude Code deletes transcripts older than 30 days when it starts; to keep them, set "cleanupPeriodDays": 3650 in ${file}. ` +
        `The mirror is the safety net: ${mirrorRetention(config)}`,
    }];
  }
  const days = found.json!.cleanupPeriodDays;
  if (typeof days !== "number" || !Number.isInteger(days) || days < 1) {
    return [{ check, status: "warn", detail: `${JSON.stringify(days)} in ${found.path} is not a whole number of days ≥ 1; Claude Code rejects it` }];
  }
  if (days < RECENT_DAYS) {
    return [{
      check,
      status: "warn",
      detail: `${days} (${found.path}): Claude Code deletes transcripts older than ${days} days when it starts. The mirror is the safety net: ${
        mirrorRetention(config)
      }`,
    }];
  }
  if (days >= VERY_LARGE_DAYS) {
    return [{
      check,
      status: "warn",
      detail: `${days} (${found.path}): Claude Code has been seen to ignore very large values and delete transcripts after 30 days anyway; ` +
        `3650 keeps them ten years. The mirror is the safety net: ${mirrorRetention(config)}`,
    }];
  }
  return [{ check, status: "ok", detail: `${days} days (${found.path})` }];
}

/** The mirror's own retention, in words (SESSIONTAP_RETENTION_DAYS). */
function mirrorRetention(config: Readonly<Config>): string {
  return config.retentionDays === 0
    ? "SESSIONTAP_RETENTION_DAYS=0 (the default), it keeps every session"
    : `SESSIONTAP_RETENTION_DAYS=${config.retentionDays}, it keeps sessions ${config.retentionDays} days (set it higher, or 0 to keep them all)`;
}

/** The days after which Claude Code's cleanup deletes a transcript: its setting where usable, else its default of 30. */
function cleanupDays(settings: SettingsFile[]): number {
  const days = settings.find((s) => s.json !== null && s.json.cleanupPeriodDays !== undefined)?.json?.cleanupPeriodDays;
  // A very large value has been seen ignored: count on the default then.
  return typeof days === "number" && Number.isInteger(days) && days >= 1 && days < VERY_LARGE_DAYS ? days : 30;
}

/**
 * The mirror's retention against Claude Code's cleanup (docs/DESIGN.md "Retention"): a mirror that deletes a
 * session no later than Claude Code deletes its transcript keeps no copy past that cleanup.
 */
export function retention(config: Readonly<Config>, settings: SettingsFile[]): Check[] {
  const check = "mirror retention";
  const days = config.retentionDays;
  const cleanup = cleanupDays(settings);
  if (days === 0) {
    return [{
      check,
      status: "ok",
      detail: "off (the default): the mirror keeps every session, those Claude Code's cleanup deleted included (list shows them missing; " +
        "sessiontap restore ID brings one back)",
    }];
  }
  if (days <= cleanup) {
    return [{
      check,
      status: "warn",
      detail: `SESSIONTAP_RETENTION_DAYS=${days}: the mirror deletes a session after ${days} days, no later than Claude Code's cleanup deletes its ` +
        `transcript (${cleanup} days), so no copy outlives it; unset it to keep every session, or set it well past ${cleanup}`,
    }];
  }
  return [{
    check,
    status: "ok",
    detail: `SESSIONTAP_RETENTION_DAYS=${days}: the mirror keeps sessions ${days} days, past Claude Code's cleanup (${cleanup})`,
  }];
}

/**
 * What the tap would refuse in the first two levels of the tree (session directories and their files, its
 * own `.locks`, `.staging`, `.spool` and events log): another user's, open to others, or a link. Each is
 * refused at write time with an events-log line; here, with what to do about it.
 */
export async function plantedEntries(io: CommandIo, root: string): Promise<{ check: string; status: "warn" | "fail"; detail: string }[]> {
  const found: string[] = [];
  const look = async (path: string, depth: number): Promise<void> => {
    for (const entry of await io.fs.readdir(path)) {
      if (found.length >= 5) return;
      const child = join(path, entry.name);
      const info = await io.fs.lstat(child);
      if (info === null) continue;
      const why = info.isSymbolicLink ? "is a symbolic link" : untrusted(info, info.isDirectory ? "directory" : "file");
      if (why !== null) found.push(`${child} ${why}`);
      else if (info.isDirectory && depth < 1) await look(child, depth + 1);
    }
  };
  try {
    await look(root, 0);
  } catch (error) {
    return [{ check: "mirror tree", status: "warn", detail: `could not look through ${root} (${describe(error)})` }];
  }
  if (found.length === 0) return [];
  return [{
    check: "mirror tree",
    status: "fail",
    detail: `the tap refuses to write into ${found.join("; ")}${
      found.length >= 5 ? "; …" : ""
    }: the mirror did not put them there — look at them, then remove them (or chmod go-w what is yours)`,
  }];
}

/** Sessions younger than this count as recent. */
export const RECENT_DAYS = 30;

/**
 * Recent sessions whose Claude Code transcript is missing, a stub, behind the mirror or torn, as the one judge says,
 * with the command that restores each. A session in `alerted` is left out: the tap's guard alert for it says the same, once.
 */
export async function transcriptChecks(config: Readonly<Config>, io: CommandIo, alerted: ReadonlySet<string> = new Set()): Promise<Check[]> {
  const since = io.clock() - RECENT_DAYS * 86_400_000;
  const catalog = new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir, undefined, undefined, io.clock);
  const sessions = (await catalog.judged()).filter(({ entry: s }) =>
    s.sessionId !== null && s.lastTimestamp !== null && Date.parse(s.lastTimestamp) >= since && s.counts.prompts + s.counts.answers > 0 &&
    !alerted.has(s.sessionId)
  );
  const out: Check[] = [];
  const warn = (detail: string) => out.push({ check: "transcripts", status: "warn", detail });
  // An id Claude Code could not have made is never looked up in its tree (docs/DESIGN.md "Trust boundaries").
  const odd = sessions.filter((s) => s.entry.claudeTranscriptProblem !== null);
  if (odd.length > 0) {
    warn(
      `${odd.length} mirrored session${odd.length === 1 ? " has an id" : "s have ids"} Claude Code could not have made (${
        odd[0].entry.dir
      }…): readable with show/export, not restorable`,
    );
  }
  for (const { entry: s } of sessions.filter((x) => x.entry.claudeTranscriptWarning !== null).slice(0, 20)) {
    warn(
      `${s.sessionId}: ${
        scrubLine(s.claudeTranscriptWarning!)
      } — where Claude Code keeps its transcript; move it away, then: sessiontap restore ${s.sessionId}`,
    );
  }
  const plain = sessions.filter((x) => x.entry.claudeTranscriptProblem === null && x.entry.claudeTranscriptWarning === null);
  for (const { entry: s, info } of plain.filter((x) => x.info.state !== "intact").slice(0, 20)) {
    const where = `${s.sessionId} (${s.lastTimestamp}, ${shownCwd(s.cwd)}): Claude Code's transcript`;
    const cwd = s.cwd === null ? " --cwd DIR (the directory you run claude in)" : "";
    if (info.state === "behind") {
      out.push({
        check: "transcripts",
        status: "fail",
        detail: `${where} is behind the mirror: it lacks ${
          lackingWords(info.verdict.lacking)
        } of the session's current branch (cut, or deleted and started afresh); quit Claude Code, then: sessiontap restore ${s.sessionId} (a backup is kept)`,
      });
    } else {
      out.push({
        check: "transcripts",
        status: info.state === "stub" ? "fail" : "warn",
        detail: `${where} is ${info.state === "stub" ? "a stub" : "missing"}; restore it: sessiontap restore ${s.sessionId}${cwd}`,
      });
    }
  }
  for (const { entry: s, info } of plain.filter((x) => x.info.state === "intact").slice(0, 20)) {
    if (info.verdict.lacking.prompts + info.verdict.lacking.answers > 0) {
      warn(
        `${s.claudeTranscriptPath} lacks ${lackingWords(info.verdict.lacking)} of the mirror's current branch but holds ${
          plural(info.verdict.extra, "prompt or answer", "prompts or answers")
        } the mirror does not: compare with sessiontap show ${s.sessionId}; sessiontap restore ${s.sessionId} --force replaces it (a backup is kept)`,
      );
    } else if (info.facts?.torn) {
      warn(
        `${s.claudeTranscriptPath} ends in a torn line (a record cut off mid-write; the next one Claude Code appends is lost with it); quit Claude Code, then: sessiontap restore ${s.sessionId} --force (a backup is kept)`,
      );
    }
  }
  if (out.length === (odd.length > 0 ? 1 : 0)) {
    out.push({
      check: "transcripts",
      status: "ok",
      detail: `Claude Code's transcript is whole for all ${plural(sessions.length - odd.length, "session")} mirrored in the last ${RECENT_DAYS} days`,
    });
  }
  return out;
}

/** A session's cwd as doctor prints it: it comes from a request, so never with a control character or a line break. */
function shownCwd(cwd: string | null): string {
  return cwd === null ? "cwd unknown" : scrubLine(cwd);
}
