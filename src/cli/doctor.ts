/**
 * `sessiontap doctor`: checks what makes a user lose a transcript or bypass the tap, each as ok / warn /
 * FAIL with what to do; exit 1 when any check fails.
 *
 * - the mirror root: a real directory of this user's, private (0700), writable, with free space; and
 *   nothing in its top levels that the tap would refuse (another user's, open to others, a link);
 * - the tap Claude Code uses (`--url` / `--port` name another): something answers `/_tap/health` there,
 *   mirroring where doctor looks, and every problem its health lists (a failing upstream, queued commits)
 *   is a problem here too;
 * - the base URL Claude Code will use: `ANTHROPIC_BASE_URL` from Claude Code's settings (`env`, which it
 *   applies over the shell's: project `.claude/settings.local.json`, then `.claude/settings.json`, then
 *   `<claude-dir>/settings.json`), else from the environment; it must be a tap;
 * - `cleanupPeriodDays`: Claude Code deletes transcripts older than it (default 30) when it starts, and
 *   very large values have been seen ignored; the mirror's own retention is named as the safety net, and
 *   is a warning when it deletes no later than that cleanup;
 * - recent sessions whose Claude Code transcript is a stub, missing, behind the mirror or torn, and the
 *   guard's state and alerts (cli/doctor-transcripts.ts), each with the command that fixes it.
 */
import type { Config } from "../config/parse.ts";
import { untrusted } from "../storage/trusted-path.ts";
import { plantedEntries } from "./doctor-tree.ts";
import { type CommandIo, humanBytes } from "./command-io.ts";
import type { Check } from "./doctor-check.ts";
import { alertedSessions, guardCheck, RECENT_DAYS, transcriptChecks } from "./doctor-transcripts.ts";
import { isObject } from "../protocol/json.ts";
import { probeTap } from "./tap-probe.ts";
import { join } from "../storage/paths.ts";

export type { Check };

const MIB = 1024 * 1024;
/** From here on, a `cleanupPeriodDays` is "very large": values like 99999 have been reported ignored (transcripts deleted at 30 days anyway). */
const VERY_LARGE_DAYS = 10_000;

/** Runs `doctor`. */
export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const settings = await settingsFiles(config, io); // read once: two checks look at them
  const tap = await tapAndBaseUrl(config, io, settings);
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
    io.stdout(JSON.stringify(checks, null, 2) + "\n");
  } else {
    const width = Math.max(...checks.map((c) => c.check.length));
    const lines = checks.map((c) => `${c.status === "fail" ? "FAIL" : c.status.padEnd(4)}  ${c.check.padEnd(width)}  ${c.detail}`);
    lines.push("", fails === 0 && warns === 0 ? "All checks passed." : `${fails} problem${fails === 1 ? "" : "s"}, ${warns} warning${warns === 1 ? "" : "s"}.`);
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
    out.push({ check: "free space", status, detail: `${humanBytes(freeBytes)} free for ${root}${status === "ok" ? "" : ": a full disk stops the mirror"}` });
  } catch (error) {
    out.push({ check: "free space", status: "warn", detail: `could not tell (${(error as { code?: string }).code ?? (error as Error).message})` });
  }
  if (!out.some((c) => c.check === check)) out.unshift({ check, status: "ok", detail: `${root} (mode ${mode}, writable)` });
  return out;
}

/** What a tap's health route says, or why no tap answered (`down`: nothing answers at all, so requests sent there fail). */
async function probe(
  io: CommandIo,
  base: string,
  token: string | null,
): Promise<{ ok: true; health: Record<string, unknown> } | { ok: false; why: string; down: boolean }> {
  const found = await probeTap(io.fetch, base, token);
  if (found.kind === "sessiontap") return { ok: true, health: found.health };
  if (found.kind === "locked") {
    return {
      ok: false,
      down: false,
      why: `${found.url} answers ${found.status}, but shows its details only with its token (${
        token === null ? "set SESSIONTAP_TOKEN" : "SESSIONTAP_TOKEN is not that token"
      })`,
    };
  }
  if (found.kind === "other") return { ok: false, down: false, why: `${found.url} answers, but is not a sessiontap tap (HTTP ${found.httpStatus})` };
  return { ok: false, down: true, why: `nothing answers at ${found.url} (${found.why})` };
}

/** What Claude Code does when its base URL reaches nothing (measured with 2.1.328 and 2.1.332: docs/DESIGN.md "Never in the way"). */
const REQUESTS_FAIL = 'Claude Code\'s requests fail: it retries for about 3 minutes (interactive: "Connection refused … retrying"; ' +
  'claude -p: silent), then stops with "API Error: Connection refused"';

/** One of Claude Code's settings files, with its parsed JSON (null: unreadable, and why). */
type SettingsFile = { path: string; json: Record<string, unknown> | null; error: string | null };

/** Claude Code's settings files that exist, most specific first. */
async function settingsFiles(config: Readonly<Config>, io: CommandIo): Promise<SettingsFile[]> {
  const project = config.cwd ?? io.cwd;
  const paths = [join(project, ".claude", "settings.local.json"), join(project, ".claude", "settings.json"), join(config.claudeDir, "settings.json")];
  const out = [];
  for (const path of [...new Set(paths)]) {
    const info = await io.fs.lstat(path);
    if (info === null) continue;
    try {
      const json = JSON.parse(await io.fs.readText(path)) as unknown;
      out.push({ path, json: isObject(json) ? json : null, error: isObject(json) ? null : "not a JSON object" });
    } catch (error) {
      out.push({ path, json: null, error: (error as Error).message.split("\n")[0] });
    }
  }
  return out;
}

/** The base URL Claude Code will use: from its settings (`env`, applied over the shell's), else the environment. */
function claudeBaseUrl(
  settings: SettingsFile[],
  env: CommandIo["env"],
): { url: string; where: string; fromSettings: string | null } | null {
  const fromSettings = settings.find((s) => isObject(s.json?.env) && typeof (s.json!.env as Record<string, unknown>).ANTHROPIC_BASE_URL === "string");
  if (fromSettings !== undefined) {
    return {
      url: (fromSettings.json!.env as Record<string, string>).ANTHROPIC_BASE_URL,
      where: `in ${fromSettings.path} (env)`,
      fromSettings: fromSettings.path,
    };
  }
  const fromEnv = env.ANTHROPIC_BASE_URL;
  return fromEnv === undefined || fromEnv === "" ? null : { url: fromEnv, where: "in the environment", fromSettings: null };
}

/** Health's problems as checks: "upstream: …" becomes check "tap upstream", and so on. */
function problemChecks(health: Record<string, unknown>): Check[] {
  const problems = Array.isArray(health.problems) ? health.problems.filter((p): p is string => typeof p === "string") : [];
  if (health.status === "degraded" && problems.length === 0) return [{ check: "tap health", status: "fail", detail: "degraded (no problem named)" }];
  return problems.map((p) => {
    const colon = p.indexOf(": ");
    return colon > 0 && colon < 20
      ? { check: `tap ${p.slice(0, colon)}`, status: "fail", detail: p.slice(colon + 2) }
      : { check: "tap health", status: "fail", detail: p };
  });
}

/**
 * The tap Claude Code would use (or the one `--url` / `--port` names), what its health says, and the base
 * URL Claude Code will actually use.
 */
async function tapAndBaseUrl(
  config: Readonly<Config>,
  io: CommandIo,
  settings: SettingsFile[],
): Promise<{ checks: Check[]; health: Record<string, unknown> | null }> {
  const out: Check[] = [];
  for (const s of settings) if (s.error !== null) out.push({ check: "claude settings", status: "warn", detail: `${s.path} could not be read: ${s.error}` });
  const base = claudeBaseUrl(settings, io.env);
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host === "::" ? "::1" : config.host;
  const defaultTap = `http://${host.includes(":") ? `[${host}]` : host}:${config.port}`;
  const [tapUrl, chosen] = config.url !== null
    ? [config.url.replace(/\/+$/, ""), "--url"]
    : config.sources.port === "flag"
    ? [`http://127.0.0.1:${config.port}`, "--port"]
    : base !== null
    ? [base.url.replace(/\/+$/, ""), `ANTHROPIC_BASE_URL ${base.where}`]
    : [defaultTap, "the default address"];
  const tap = await probe(io, tapUrl, config.token);
  if (tap.ok) {
    const mirror = tap.health.mirror;
    const about = `${tapUrl} (${chosen})`;
    if (mirror === "off") {
      out.push({ check: "tap", status: "warn", detail: `${about} is up, but runs with the mirror off (--no-mirror / SESSIONTAP_MIRROR=off)` });
    } else if (isObject(mirror) && typeof mirror.root === "string" && mirror.root !== config.mirrorDir) {
      out.push({
        check: "tap",
        status: "warn",
        detail: `${about} is up, mirroring to ${mirror.root}; this doctor looked at ${config.mirrorDir} (pass --mirror-dir)`,
      });
    } else out.push({ check: "tap", status: "ok", detail: `${about} is up (sessiontap ${String(tap.health.version)}, ${String(tap.health.runtime)})` });
    out.push(...guardCheck(tap.health), ...problemChecks(tap.health));
  } else {
    out.push({
      check: "tap",
      status: "fail",
      detail: `${tap.why} (${chosen}); start it: sessiontap serve${
        chosen === "--port" || chosen === "--url" ? "" : ", or name it: sessiontap doctor --url URL"
      }`,
    });
  }

  const check = "ANTHROPIC_BASE_URL";
  if (base === null) {
    out.push({
      check,
      status: "fail",
      detail: `not set, so Claude Code talks to the API directly and nothing is mirrored: export ANTHROPIC_BASE_URL=${tapUrl} (or set it under "env" in ${
        join(config.claudeDir, "settings.json")
      })`,
    });
    return { checks: out, health: tap.ok ? tap.health : null };
  }
  const fromEnv = io.env.ANTHROPIC_BASE_URL;
  if (base.fromSettings !== null && fromEnv !== undefined && fromEnv !== "" && fromEnv !== base.url) {
    out.push({ check, status: "warn", detail: `the environment says ${fromEnv}, but Claude Code applies ${base.url} from ${base.fromSettings} over it` });
  }
  const target = base.url.replace(/\/+$/, "") === tapUrl ? tap : await probe(io, base.url, config.token);
  if (target.ok) out.push({ check, status: "ok", detail: `${base.url} ${base.where} reaches a tap` });
  else if (target.down) {
    // Never in the way: a base URL that reaches nothing stops Claude Code, so say so and how to go around the tap.
    const bypass = base.fromSettings === null ? "unset ANTHROPIC_BASE_URL" : `remove ANTHROPIC_BASE_URL from "env" in ${base.fromSettings}`;
    out.push({
      check,
      status: "fail",
      detail: `${base.url} ${base.where}: ${target.why}. ${REQUESTS_FAIL}. Start the tap (sessiontap serve, or run sessiontap claude), ` +
        `or go around it: ${bypass}`,
    });
  } else out.push({ check, status: "fail", detail: `${base.url} ${base.where}: ${target.why}; Claude Code's requests go there and are not mirrored` });
  return { checks: out, health: tap.ok ? tap.health : null };
}

/** Claude Code's transcript retention. */
function cleanupPeriod(config: Readonly<Config>, settings: SettingsFile[]): Check[] {
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
function retention(config: Readonly<Config>, settings: SettingsFile[]): Check[] {
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
