/**
 * The guard's alerts: one per session whose Claude Code transcript is missing, a stub, or behind the
 * mirror. Raising one prints one line on stderr with the command that brings the conversation back and
 * writes a `guard-alert` event — once per session and state, however many turns pass (a session that
 * became whole again and is then lost again is told again). Clearing prints one line and writes
 * `guard-clear`. The list is what `/_tap/health` shows under `guard.alerts`, and each alert is a health
 * problem, so the tap reads "degraded" and `doctor` names it.
 */
import type { EventFields } from "../storage/events-log.ts";
import { plural } from "../utils/plural.ts";

/** What is wrong with a transcript. */
export type GuardState = "missing" | "stub" | "behind";

/** One alert, as health lists it. */
export interface GuardAlert {
  sessionId: string;
  state: GuardState;
  /** When the guard first saw this state (ISO time). */
  since: string;
  /** The transcript's path (where it was, for "missing"). */
  path: string | null;
  /** For "behind": how many prompts the mirror holds that the transcript lacks. */
  lacking?: number;
  /** The command that brings the conversation back. */
  command: string;
}

/** The command that puts a session back: a transcript with content is only replaced with --force (a backup is kept). */
export function restoreCommand(sessionId: string, state: GuardState): string {
  return `sessiontap restore ${sessionId}${state === "behind" ? " --force" : ""}`;
}

/** A state in words, for a line that starts "Claude Code's transcript of <id> …". */
function what(state: GuardState, lacking: number | undefined): string {
  if (state === "missing") return "is gone";
  if (state === "stub") return "is a stub (no conversation left in it, so claude --resume cannot continue it)";
  const n = lacking ?? 0;
  return `lacks ${plural(n, "prompt")} the mirror holds (the file was cut or started afresh)`;
}

/** The alerts of one tap. */
export class GuardAlerts {
  private readonly active = new Map<string, GuardAlert>();
  /** States already told on stderr, per session, since it was last whole. */
  private readonly told = new Map<string, Set<GuardState>>();

  constructor(
    private readonly stderr: (line: string) => void,
    private readonly log: (action: string, fields: EventFields) => void,
    /** Told the whole list whenever it changed (the viewer's banners live in another thread). */
    private readonly onChange: (alerts: GuardAlert[]) => void,
  ) {}

  /** The list changed: tell it. */
  private changed(): void {
    this.onChange(this.list());
  }

  /** Raises (or updates) the alert of `sessionId`; says so once per session and state. */
  raise(sessionId: string, state: GuardState, sinceMs: number, path: string | null, lacking?: number): void {
    const current = this.active.get(sessionId);
    if (current !== undefined && current.state === state) {
      if (lacking !== undefined && current.lacking !== lacking) {
        current.lacking = lacking;
        this.changed();
      }
      return;
    }
    const command = restoreCommand(sessionId, state);
    this.active.set(sessionId, { sessionId, state, since: new Date(sinceMs).toISOString(), path, ...(lacking === undefined ? {} : { lacking }), command });
    this.log("guard-alert", { session: sessionId, state, ...(lacking === undefined ? {} : { lacking }) });
    this.changed();
    const told = this.told.get(sessionId) ?? new Set<GuardState>();
    this.told.set(sessionId, told);
    if (told.has(state)) return;
    told.add(state);
    const where = path === null ? "" : ` (${path})`;
    this.stderr(
      `sessiontap: guard: Claude Code's transcript of session ${sessionId} ${what(state, lacking)}${where}; ` +
        `the mirror holds the conversation: quit Claude Code, then run: ${command}`,
    );
  }

  /** Clears the alert of `sessionId` (its transcript is whole again); says so when one was raised. */
  clear(sessionId: string): void {
    const current = this.active.get(sessionId);
    this.told.delete(sessionId);
    if (current === undefined) return;
    this.active.delete(sessionId);
    this.changed();
    this.log("guard-clear", { session: sessionId, state: current.state });
    this.stderr(`sessiontap: guard: Claude Code's transcript of session ${sessionId} is whole again`);
  }

  /** Forgets a session the guard no longer watches. */
  forget(sessionId: string): void {
    if (this.active.delete(sessionId)) this.changed();
    this.told.delete(sessionId);
  }

  /** The alert of one session, or null. */
  of(sessionId: string): GuardAlert | null {
    return this.active.get(sessionId) ?? null;
  }

  /** Every active alert, oldest first. */
  list(): GuardAlert[] {
    return [...this.active.values()].sort((a, b) => a.since.localeCompare(b.since));
  }
}
