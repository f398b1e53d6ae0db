// What every doctor module shares: a check's verdict, Claude Code's settings as it will see them, and checks read from a tap's health.
import { join } from "node:path/posix";
import type { Config } from "../config/parse.ts";
import { isObject } from "../protocol/json.ts";
import { plural } from "../utils/plural.ts";
import type { CommandIo } from "./command-io.ts";

/** One check's verdict (a failure makes doctor exit 1), with what to do. */
export interface Check {
  check: string;
  status: "ok" | "warn" | "fail";
  detail: string;
}

export const verdict = (check: string, status: Check["status"], detail: string): Check => ({ check, status, detail });

/**
 * When the way Claude Code reaches the tap (`name`, set in `fromSettings` or the environment) leads to nothing: what it does
 * then (measured with 2.1.328 and 2.1.332) and how to go around the tap (docs/DESIGN.md "Never in the way").
 */
export function requestsFail(name: string, fromSettings: string | null, start: string): string {
  const bypass = fromSettings === null ? `unset ${name}` : `remove ${name} from "env" in ${fromSettings}`;
  return 'Claude Code\'s requests fail: it retries for about 3 minutes (interactive: "Connection refused … retrying"; ' +
    `claude -p: silent), then stops with "API Error: Connection refused". Start the tap (${start}), or go around it: ${bypass}`;
}

/** One of Claude Code's settings files, its JSON (null: unreadable, and why). */
export type SettingsFile = { path: string; json: Record<string, unknown> | null; error: string | null };

/** A variable as Claude Code will see it: its value, "in the environment" or "in FILE (env)", and that file. */
export interface Setting {
  value: string;
  where: string;
  fromSettings: string | null;
}

/** Claude Code's settings files that exist, most specific first: the project's local and shared ones, then the config dir's. */
export async function settingsFiles(config: Readonly<Config>, io: CommandIo): Promise<SettingsFile[]> {
  const project = config.cwd ?? io.cwd;
  const out = [];
  for (const path of new Set([join(project, ".claude/settings.local.json"), join(project, ".claude/settings.json"), join(config.claudeDir, "settings.json")])) {
    if ((await io.fs.lstat(path)) === null) continue;
    try {
      const json = JSON.parse(await io.fs.readText(path)) as unknown;
      out.push({ path, json: isObject(json) ? json : null, error: isObject(json) ? null : "not a JSON object" });
    } catch (error) {
      out.push({ path, json: null, error: (error as Error).message.split("\n")[0] });
    }
  }
  return out;
}

/** `name` as Claude Code will see it (its settings' `env` win over the environment), or null when unset or empty. */
export function claudeSetting(settings: SettingsFile[], env: CommandIo["env"], name: string): Setting | null {
  for (const s of settings) {
    const value = isObject(s.json?.env) ? s.json.env[name] : undefined;
    if (typeof value === "string") return { value, where: `in ${s.path} (env)`, fromSettings: s.path };
  }
  const value = env[name];
  return value === undefined || value === "" ? null : { value, where: "in the environment", fromSettings: null };
}

/** A switch Claude Code takes as on ("1", "true", "yes", "on"). */
export const isTruthy = (setting: Setting | null) => setting !== null && ["1", "true", "yes", "on"].includes(setting.value.trim().toLowerCase());

/** Health's `mirror.notMirrored`: conversations forwarded but not mirrored, five shapes listed (docs/DESIGN.md "Nothing forwarded unseen"). */
export function unmirroredChecks(health: Record<string, unknown>): Check[] {
  const report = isObject(health.mirror) ? health.mirror.notMirrored : undefined;
  if (!isObject(report) || !Array.isArray(report.shapes)) return [];
  const lines = report.shapes.flatMap((s) => (isObject(s) && typeof s.said === "string" ? [s.said] : []));
  const checks = lines.slice(0, 5).map((said) => verdict("not mirrored", "warn", `${said}: these conversations are not in the mirror (docs/providers.md)`));
  if (lines.length > 5) checks.push(verdict("not mirrored", "warn", `and ${lines.length - 5} more path shapes: see /_tap/health`));
  return checks;
}

/** The tap's guard: off, blind to some transcripts, or fine (each alert is a FAIL of its own, from health's problems). */
export function guardCheck(health: Record<string, unknown>): Check[] {
  const guard = health.guard;
  if (guard === "off") {
    return [verdict(
      "guard",
      "warn",
      "off in the tap (SESSIONTAP_GUARD=off, or no Claude Code config dir where it runs): " +
        "a lost transcript is only found when doctor runs; SESSIONTAP_GUARD=on turns it on",
    )];
  }
  if (!isObject(guard) || alertedSessions(health).size > 0) return [];
  const notFound = plural(Number(guard.notFound ?? 0), "session");
  if (Number(guard.notFound ?? 0) > 0) {
    return [verdict(
      "guard",
      "warn",
      `the tap has not found Claude Code's transcript of ${notFound} it mirrors: ` +
        "does it look in the config dir Claude Code uses (serve --claude-dir / CLAUDE_CONFIG_DIR)?",
    )];
  }
  return [verdict("guard", "ok", `watching ${plural(Number(guard.watching ?? 0), "active session")}, no alert`)];
}

/** The sessions the tap's guard has an alert for. */
export function alertedSessions(health: Record<string, unknown> | null): Set<string> {
  const guard = health?.guard;
  if (!isObject(guard) || !Array.isArray(guard.alerts)) return new Set();
  return new Set(guard.alerts.flatMap((a) => (isObject(a) && typeof a.sessionId === "string" ? [a.sessionId] : [])));
}
