/**
 * Claude Code's settings as `doctor` reads them: the settings files that exist (project
 * `.claude/settings.local.json`, then `.claude/settings.json`, then `<claude-dir>/settings.json`), and a
 * variable's value as Claude Code will see it — its settings' `env`, which it applies over the shell's, else
 * the environment.
 */
import type { Config } from "../config/parse.ts";
import { isObject } from "../protocol/json.ts";
import { join } from "../storage/paths.ts";
import type { CommandIo } from "./command-io.ts";

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
