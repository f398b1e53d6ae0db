/**
 * How the guard is set up (docs/GUARD.md): what it reads with, and its timings and bounds with their
 * defaults.
 */
import type { EventFields } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import type { GuardAlert } from "./alerts.ts";

/** How the guard is set up; the timings have defaults. */
export interface GuardOptions {
  fs: FsAdapter;
  claudeDir: string;
  clock: () => number;
  stderr: (line: string) => void;
  log: (action: string, fields: EventFields) => void;
  /** How old a prompt must be before its absence counts (Claude Code's own write timing). */
  settleMs?: number;
  /** How long a bad verdict must hold before it is an alert. */
  confirmMs?: number;
  /** How often recently active sessions are looked at without a turn. */
  sweepMs?: number;
  /** A session with no turn for this long is no longer swept. */
  activeMs?: number;
  /** Looks (stat + read) per minute, across all sessions. */
  maxLooksPerMinute?: number;
  /** Bytes read by one look at most. */
  maxBytesPerLook?: number;
  /** A transcript first met larger than this is read from its tail only. */
  tailBytes?: number;
  /** Sessions watched at most (least recently active go first). */
  maxSessions?: number;
  /** Prompts remembered per session at most. */
  maxPrompts?: number;
  /** Told the alerts whenever they changed. */
  onAlerts?: (alerts: GuardAlert[]) => void;
}

/** The options with every default filled in. */
export function guardSettings(options: GuardOptions): Required<GuardOptions> {
  return {
    settleMs: 1500,
    confirmMs: 2000,
    sweepMs: 10_000,
    activeMs: 30 * 60_000,
    maxLooksPerMinute: 120,
    maxBytesPerLook: 2 * 1024 * 1024,
    tailBytes: 8 * 1024 * 1024,
    maxSessions: 256,
    maxPrompts: 4096,
    onAlerts: () => {},
    ...options,
  };
}
