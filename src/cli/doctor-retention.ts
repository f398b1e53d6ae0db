/**
 * `doctor`'s retention checks: Claude Code deletes transcripts older than `cleanupPeriodDays` (default 30)
 * when it starts, and very large values have been seen ignored; the mirror's own retention is named as the
 * safety net, and is a warning when it deletes no later than that cleanup (docs/DESIGN.md "Retention").
 */
import type { Config } from "../config/parse.ts";
import { join } from "../storage/paths.ts";
import type { Check } from "./doctor-check.ts";
import type { SettingsFile } from "./doctor-settings.ts";
import { RECENT_DAYS } from "./doctor-transcripts.ts";

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
