// `GET /_tap/health` (docs/DESIGN.md "Health and exit"), assembled in one place from what each part knows of itself: the mirror's counters and alarms, the
// store's and the guard's health (in the engine's thread), the upstream's alarm and whether the engine runs (in the relay's).
import type { Guard, GuardHealth } from "../guard/guard.ts";
import type { StoreHealth } from "../store/pg-sink.ts";
import { upstreamProblems, type UpstreamState } from "../utils/upstream-health.ts";
import { orAfter } from "../utils/within.ts";
import type { Mirror } from "./mirror.ts";
import { plural } from "../utils/plural.ts";

/** Longest wait of `/_tap/health` for the engine's part. */
export const HEALTH_WAIT_MS = 2000;
/** A write that has not finished this long is a problem even before it fails (a hung disk). */
const STALLED_MS = 2000;

/** The engine's part of the body. */
export interface EngineHealth {
  problems: string[];
  mirror: Record<string, unknown>;
  store: StoreHealth | "off";
  guard: GuardHealth | "off";
}

/** What the relay's thread knows. */
export interface RelayFacts {
  version: string;
  runtime: string;
  /** The tap's process id: a second tap refused the port, or a launcher reusing it, names it. */
  pid: number;
  upstream: UpstreamState;
  /** Requests the server could not answer (an internal error). */
  internalErrors: number;
  /** Problems of the relay's own parts (the forward proxy's upstreams, its internal errors). */
  problems?: string[];
  /** Wrong tokens and tries refused while their client waited, when the tap has a token (docs/RELIABILITY.md "Trust boundaries"). */
  token?: { failures: number; slowed: number; clients: number };
}

/** The engine as the relay sees it: its part of health, and why it stopped (null while it runs). */
export interface EngineView {
  health(): Promise<EngineHealth | null>;
  readonly stopped: string | null;
  /** Engines started in place of a dead one. */
  readonly restarts: number;
}

/** The engine's part: the mirror's counters and states, the store's and the guard's health, and their problems. */
export function engineHealth(mirror: Mirror, guard: Guard | null): EngineHealth {
  const store = mirror.options.store?.health() ?? null;
  return {
    problems: [...mirrorProblems(mirror), ...(store === null ? [] : storeProblems(store)), ...(guard === null ? [] : guardProblems(guard))],
    mirror: {
      root: mirror.options.root,
      ...mirror.stats,
      writes: mirror.alarms.writes.state(),
      eventsLog: mirror.alarms.eventsLog.state(),
      eventsLogFailures: mirror.events.failures,
      sessionsInMemory: mirror.writer.size,
    },
    store: store ?? "off",
    guard: guard?.health() ?? "off",
  };
}

/** The body: the relay's facts and the engine's part (null: the mirror is off), which it waits for at most HEALTH_WAIT_MS. */
export async function healthReport(relay: RelayFacts, engine: EngineView | null): Promise<Record<string, unknown>> {
  // A busy or stuck engine must not hang health: past the bound, that is the problem health reports. A
  // refusal means the engine stopped, which `stopped` says.
  const asked = engine === null ? null : await orAfter(engine.health(), HEALTH_WAIT_MS, "late" as const).catch(() => null);
  const part = asked === "late" ? null : asked;
  const problems = [...upstreamProblems(relay.upstream), ...(relay.problems ?? []), ...(part?.problems ?? [])];
  if (engine !== null && engine.stopped !== null) {
    problems.push(`mirror: the mirror engine stopped (${engine.stopped}); nothing is mirrored until it runs again`);
  }
  if (asked === "late") problems.push(`mirror: the mirror engine did not answer within ${HEALTH_WAIT_MS} ms`);
  return {
    status: problems.length === 0 ? "ok" : "degraded",
    problems,
    version: relay.version,
    runtime: relay.runtime,
    pid: relay.pid,
    upstream: relay.upstream,
    mirror: part?.mirror ?? "off",
    store: part?.store ?? "off",
    guard: part?.guard ?? "off",
    internalErrors: relay.internalErrors,
    engineRestarts: engine?.restarts ?? 0,
    ...(relay.token === undefined ? {} : { token: relay.token }),
  };
}

/** The mirror's problems, from its counters and alarms. */
function mirrorProblems(mirror: Mirror): string[] {
  const { stats, alarms } = mirror;
  const writes = alarms.writes.state();
  const out: string[] = [];
  // A commit is queued from the moment it is handed over: waiting is a problem once a write failed, or
  // once the oldest has waited past any ordinary write (the client never waits for it: docs/DESIGN.md "Writes").
  const waited = mirror.queue.longestWaitMs();
  if (stats.queued > 0 && (writes.failing || waited >= STALLED_MS)) {
    const why = writes.lastError ?? `a write has not finished for ${(waited / 1000).toFixed(1)} s`;
    out.push(`mirror: ${plural(stats.queued, "commit")} waiting to be written (${why})`);
  } else if (writes.failing) out.push(`mirror: the last write failed (${writes.lastError})`);
  if (stats.dropped > 0) {
    out.push(`mirror: ${plural(stats.dropped, "commit")} dropped since start (the queue was full): those answers are not in the mirror`);
  }
  if (stats.gaveUp > 0) {
    out.push(
      `mirror: ${
        plural(stats.gaveUp, "answer")
      } given up since start (the mirror engine fell behind the relay): each is written from the next request's history`,
    );
  }
  if (stats.failedResponses > 0) out.push(`mirror: ${plural(stats.failedResponses, "response")} could not be mirrored (internal error; see the events log)`);
  if (mirror.locks.waiting > 0) {
    out.push(`mirror: ${plural(mirror.locks.waiting, "writer lock")} not released yet (${alarms.locks.state().lastError ?? "retrying"}); retrying`);
  }
  if (alarms.eventsLog.failing) out.push(`mirror: the events log is not being written (${alarms.eventsLog.state().lastError})`);
  return out;
}

/** The store's problems, from its own health. */
function storeProblems(h: StoreHealth): string[] {
  const out: string[] = [];
  if (h.status === "unreachable") out.push(`store: unreachable (${h.spooled} commits spooled; ${h.lastError ?? ""})`);
  if (h.status === "misconfigured") {
    out.push(`store: misconfigured: ${h.misconfigured ?? h.lastError ?? ""}; fix SESSIONTAP_STORE (${h.spooled} commits spooled)`);
  }
  if (h.dropped > 0) out.push(`store: ${h.dropped} commits could not be spooled and are not in the store`);
  if (h.setAside > 0) out.push(`store: ${h.setAside} commits refused by the store, kept in its spool's failed-*.jsonl`);
  return out;
}

/** The guard's problems: every alert, and a transcript it cannot read. */
export function guardProblems(guard: Guard): string[] {
  const out = guard.health().alerts.map((a) =>
    `guard: Claude Code's transcript of ${a.sessionId} ${
      a.state === "behind" ? `is behind the mirror (lacks ${a.lacking ?? 0} prompts)` : a.state === "stub" ? "is a stub" : "is missing"
    }: ${a.command}`
  );
  if (guard.readFailure !== null) out.push(`guard: cannot read Claude Code's transcripts (${guard.readFailure}): the guard is blind to them`);
  return out;
}
