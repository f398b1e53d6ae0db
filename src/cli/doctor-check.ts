// What every doctor module shares: one check's verdict, Claude Code's settings as it will see them, and the checks read from a tap's health.
import type { Config } from "../config/parse.ts";
import { isObject } from "../protocol/json.ts";
import { join } from "node:path/posix";
import type { CommandIo } from "./command-io.ts";
import { plural } from "../utils/plural.ts";

/** One check's verdict: ok, a warning, or a failure (exit 1), with what to do. */
export interface Check {
  check: string;
  status: "ok" | "warn" | "fail";
  detail: string;
}

/**
 * What to say when the way Claude Code reaches the tap (its base URL, or its HTTPS_PROXY: `name`, set as
 * `where`) leads to nothing: its requests fail — measured with 2.1.328 and 2.1.332 — and how to go
 * around the tap (docs/DESIGN.md "Never in the way").
 */
export function requestsFail(name: string, fromSettings: string | null, start: string): string {
  const bypass = fromSettings === null ? `unset ${name}` : `remove ${name} from "env" in ${fromSettings}`;
  return 'Claude Code\'s requests fail: it retries for about 3 minutes (interactive: "Connection refused … retrying"; ' +
    `claude -p: silent), then stops with "API Error: Connection refused". Start the tap (${start}), or go around it: ${bypass}`;
}

/** One of Claude Code's settings files, with its parsed JSON (null: unreadable, and why). */
export type SettingsFile = { path: string; json: Record<string, unknown> | null; error: string | null };

/** A variable as Claude Code will see it, and where it was set. */
export interface Setting {
  value: string;
  /** "in the environment", or "in FILE (env)". */
  where: string;
  /** The settings file it came from, or null for the environment. */
  fromSettings: string | null;
}

/** Claude Code's settings files that exist, most specific first. */
export async function settingsFiles(config: Readonly<Config>, io: CommandIo): Promise<SettingsFile[]> {
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

/** `name` as Claude Code will see it (its settings' `env` first), or null when unset or empty. */
export function claudeSetting(settings: SettingsFile[], env: CommandIo["env"], name: string): Setting | null {
  for (const s of settings) {
    const value = isObject(s.json?.env) ? (s.json!.env as Record<string, unknown>)[name] : undefined;
    if (typeof value === "string") return { value, where: `in ${s.path} (env)`, fromSettings: s.path };
  }
  const value = env[name];
  return value === undefined || value === "" ? null : { value, where: "in the environment", fromSettings: null };
}

/** True for a value Claude Code takes as a switch turned on ("1", "true", "yes", "on"). */
export function isTruthy(setting: Setting | null): boolean {
  return setting !== null && ["1", "true", "yes", "on"].includes(setting.value.trim().toLowerCase());
}

/** Shapes listed one by one; the rest are summed up in one line. */
const LISTED = 5;

/** The checks for health's `mirror.notMirrored` (none when nothing went unseen). */
export function unmirroredChecks(health: Record<string, unknown>): Check[] {
  const report = isObject(health.mirror) ? health.mirror.notMirrored : undefined;
  if (!isObject(report) || !Array.isArray(report.shapes)) return [];
  const lines = report.shapes.filter((s): s is { said: string } => isObject(s) && typeof s.said === "string").map((s) => s.said);
  const checks: Check[] = lines.slice(0, LISTED).map((said) => ({
    check: "not mirrored",
    status: "warn",
    detail: `${said}: these conversations are not in the mirror (docs/providers.md)`,
  }));
  if (lines.length > LISTED) checks.push({ check: "not mirrored", status: "warn", detail: `and ${lines.length - LISTED} more path shapes: see /_tap/health` });
  return checks;
}

/** The guard of the tap doctor found (its alerts are health problems, reported with the others). */
export function guardCheck(health: Record<string, unknown>): Check[] {
  const guard = health.guard;
  if (guard === undefined) return [];
  if (guard === "off") {
    return [{
      check: "guard",
      status: "warn",
      detail:
        "off in the tap (SESSIONTAP_GUARD=off, or no Claude Code config dir where it runs): a lost transcript is only found when doctor runs; SESSIONTAP_GUARD=on turns it on",
    }];
  }
  if (!isObject(guard)) return [];
  const watching = Number(guard.watching ?? 0);
  const notFound = Number(guard.notFound ?? 0);
  // Each alert is a FAIL line of its own (a health problem): no "ok" line beside it for the same fact.
  if (alertedSessions(health).size > 0) return [];
  if (notFound > 0) {
    return [{
      check: "guard",
      status: "warn",
      detail: `the tap has not found Claude Code's transcript of ${
        plural(notFound, "session")
      } it mirrors: does it look in the config dir Claude Code uses (serve --claude-dir / CLAUDE_CONFIG_DIR)?`,
    }];
  }
  return [{
    check: "guard",
    status: "ok",
    detail: `watching ${plural(watching, "active session")}, no alert`,
  }];
}

/** The sessions the tap's guard has an alert for, from its health. */
export function alertedSessions(health: Record<string, unknown> | null): Set<string> {
  const guard = health?.guard;
  if (!isObject(guard) || !Array.isArray(guard.alerts)) return new Set();
  return new Set(guard.alerts.flatMap((a) => (isObject(a) && typeof a.sessionId === "string" ? [a.sessionId] : [])));
}
