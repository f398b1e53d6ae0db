/**
 * The body of `GET /_tap/health` (docs/DESIGN.md "Health and exit"): `status` is "ok" only when nothing
 * listed in `problems` holds — the mirror has nothing queued or dropped and its last write succeeded, the
 * events log is written, the upstream's last attempt succeeded (or none was made), a shared store is
 * reachable, the guard has no alert (a Claude Code transcript lost while mirrored) — else "degraded". It
 * answers 200 either way: the process is alive.
 */
import type { CommitSink } from "../writer/commit-sink.ts";
import type { Mirror } from "./mirror.ts";
import type { UpstreamHealth } from "./upstream-health.ts";

/** What health reads of the guard (src/guard/guard.ts): its state and its problems (each alert is one). */
export interface GuardReport {
  health(): unknown;
  problems(): string[];
}

/** What the report is made from. */
export interface HealthParts {
  version: string;
  runtime: string;
  upstream: UpstreamHealth;
  mirror: Mirror | null;
  store: CommitSink | null;
  /** The guard, or null when it is off. */
  guard?: GuardReport | null;
  /** Requests the server could not answer (an internal error). */
  internalErrors: () => number;
}

/** The store's problems, from its own health. */
function storeProblems(store: CommitSink): string[] {
  const h = store.health();
  const out: string[] = [];
  if (h.status === "unreachable") out.push(`store: unreachable (${Number(h.spooled ?? 0)} commits spooled; ${String(h.lastError ?? "")})`);
  if (Number(h.dropped ?? 0) > 0) out.push(`store: ${Number(h.dropped)} commits could not be spooled and are not in the store`);
  if (Number(h.setAside ?? 0) > 0) out.push(`store: ${Number(h.setAside)} commits refused by the store, kept in its spool's failed-*.jsonl`);
  return out;
}

/** Builds the health body. */
export function healthReport(parts: HealthParts): Record<string, unknown> {
  const { mirror, store } = parts;
  const guard = parts.guard ?? null;
  const problems = [
    ...parts.upstream.problems(), ...(mirror?.problems() ?? []), ...(store === null ? [] : storeProblems(store)), ...(guard?.problems() ?? []),
  ];
  return {
    status: problems.length === 0 ? "ok" : "degraded",
    problems,
    version: parts.version,
    runtime: parts.runtime,
    upstream: parts.upstream.state(),
    mirror: mirror === null
      ? "off"
      : {
          root: mirror.options.root, ...mirror.stats, writes: mirror.alarms.writes.state(), eventsLog: mirror.alarms.eventsLog.state(),
          eventsLogFailures: mirror.events.failures, sessionsInMemory: mirror.sessionsInMemory,
        },
    store: store === null ? "off" : store.health(),
    guard: guard === null ? "off" : guard.health(),
    internalErrors: parts.internalErrors(),
  };
}
