// The guard's alerts: said once per session and state, listed under health's guard.alerts (docs/GUARD.md "What it says").
import type { EventFields } from "../storage/events-log.ts";
import { lackingWords, type TranscriptState, type Verdict } from "../transcript/transcript-state.ts";

export type GuardState = Exclude<TranscriptState, "intact">;

export interface GuardAlert {
  sessionId: string;
  state: GuardState;
  /** When the guard first saw this state (ISO time). */
  since: string;
  /** The transcript's path (where it was, for "missing"). */
  path: string | null;
  /** For "behind": how many prompts, and answers, of the mirror's current branch it lacks. */
  lacking?: number;
  lackingAnswers?: number;
  command: string;
}

/** A state in words, after "Claude Code's transcript of <id>". */
function what(state: GuardState, lacking: Verdict["lacking"]): string {
  if (state === "missing") return "is gone";
  if (state === "stub") return "is a stub (no conversation left in it, so claude --resume cannot continue it)";
  return `is behind the mirror: it lacks ${lackingWords(lacking)} the mirror holds (the file was cut or started afresh)`;
}

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

  raise(sessionId: string, state: GuardState, sinceMs: number, path: string | null, lacking: Verdict["lacking"]): void {
    const counts: { lacking?: number; lackingAnswers?: number } = state === "behind" ? { lacking: lacking.prompts, lackingAnswers: lacking.answers } : {};
    const current = this.active.get(sessionId);
    if (current?.state === state) {
      if (current.lacking !== counts.lacking || current.lackingAnswers !== counts.lackingAnswers) Object.assign(current, counts), this.onChange(this.list());
      return;
    }
    const command = `sessiontap restore ${sessionId}`;
    this.active.set(sessionId, { sessionId, state, since: new Date(sinceMs).toISOString(), path, ...counts, command });
    this.log("guard-alert", { session: sessionId, state, ...(counts as Record<string, number>) });
    this.onChange(this.list());
    const told = this.told.get(sessionId) ?? new Set<GuardState>();
    this.told.set(sessionId, told);
    if (told.has(state)) return;
    told.add(state);
    this.stderr(
      `sessiontap: guard: Claude Code's transcript of session ${sessionId} ${what(state, lacking)}${path === null ? "" : ` (${path})`}; ` +
        `the mirror holds the conversation: quit Claude Code, then run: ${command}`,
    );
  }

  /** The transcript is whole again: clears its alert, and says so when one was raised. */
  clear(sessionId: string): void {
    const current = this.active.get(sessionId);
    this.told.delete(sessionId);
    if (current === undefined) return;
    this.active.delete(sessionId);
    this.onChange(this.list());
    this.log("guard-clear", { session: sessionId, state: current.state });
    this.stderr(`sessiontap: guard: Claude Code's transcript of session ${sessionId} is whole again`);
  }

  /** Forgets a session the guard no longer watches. */
  forget(sessionId: string): void {
    if (this.active.delete(sessionId)) this.onChange(this.list());
    this.told.delete(sessionId);
  }

  of(sessionId: string): GuardAlert | null {
    return this.active.get(sessionId) ?? null;
  }

  /** Every active alert, oldest first. */
  list(): GuardAlert[] {
    return [...this.active.values()].sort((a, b) => a.since.localeCompare(b.since));
  }
}
