// `GET /_tap/health` (docs/DESIGN.md "Health and exit"): the engine's part (mirror, store, guard) and the relay's (upstream, the engine's life).
import type { Guard, GuardHealth } from "../guard/guard.ts";
import type { StoreHealth } from "../store/pg-sink.ts";
import { upstreamProblems, type UpstreamState } from "../utils/upstream-health.ts";
import { orAfter } from "../utils/within.ts";
import type { Mirror } from "./mirror.ts";
import { mirrorProblems } from "./problems.ts";

/** Longest wait of `/_tap/health` for the engine's part. */
export const HEALTH_WAIT_MS = 2000;

export interface EngineHealth {
  problems: string[];
  mirror: Record<string, unknown>;
  store: StoreHealth | "off";
  guard: GuardHealth | "off";
}

export interface RelayFacts {
  version: string;
  runtime: string;
  pid: number;
  upstream: UpstreamState;
  /** Requests the server could not answer (an internal error). */
  internalErrors: number;
  /** Problems of the relay's own parts (the forward proxy's upstreams, its internal errors). */
  problems?: string[];
  /** Wrong tokens and tries refused while their client waited (docs/RELIABILITY.md "Trust boundaries"). */
  token?: { failures: number; slowed: number; clients: number };
}

export interface EngineView {
  health(): Promise<EngineHealth | null>;
  /** Why it stopped (null while it runs). */
  readonly stopped: string | null;
  readonly restarts: number;
}

export function engineHealth(mirror: Mirror, guard: Guard | null): EngineHealth {
  const store = mirror.store?.health() ?? null;
  const problems = mirrorProblems(mirror.stats, mirror.alarms, mirror.queue.longestWaitMs(), mirror.locks.waiting);
  return {
    problems: [...problems, ...(store === null ? [] : storeProblems(store)), ...(guard === null ? [] : guardProblems(guard))],
    mirror: {
      root: mirror.root,
      ...mirror.stats,
      writes: mirror.alarms.get("writes").state(),
      eventsLog: mirror.alarms.get("eventsLog").state(),
      eventsLogFailures: mirror.events.failures,
      sessionsInMemory: mirror.writer.size,
    },
    store: store ?? "off",
    guard: guard?.health() ?? "off",
  };
}

/** `engine` null: the mirror is off. */
export async function healthReport(relay: RelayFacts, engine: EngineView | null): Promise<Record<string, unknown>> {
  // A stuck engine must not hang health: past the bound, that is the problem. A refusal means it stopped, which `stopped` says.
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

export function guardProblems(guard: Guard): string[] {
  const out = guard.health().alerts.map((a) =>
    `guard: Claude Code's transcript of ${a.sessionId} ${
      a.state === "behind" ? `is behind the mirror (lacks ${a.lacking ?? 0} prompts)` : a.state === "stub" ? "is a stub" : "is missing"
    }: ${a.command}`
  );
  if (guard.readFailure !== null) out.push(`guard: cannot read Claude Code's transcripts (${guard.readFailure}): the guard is blind to them`);
  return out;
}
