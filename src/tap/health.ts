/**
 * The body of `GET /_tap/health` (docs/DESIGN.md "Health and exit"): `status` is "ok" only when nothing
 * listed in `problems` holds — the mirror has nothing queued or dropped and its last write succeeded, the
 * events log is written, the upstream's last attempt succeeded (or none was made), a shared store is
 * reachable, the guard has no alert (a Claude Code transcript lost while mirrored), the mirror engine is
 * running — else "degraded". It answers 200 either way: the process is alive.
 */
import type { EngineHealth } from "../mirror/messages.ts";
import type { UpstreamHealth } from "./upstream-health.ts";

/** What the report is made from. */
export interface HealthParts {
  version: string;
  runtime: string;
  /** The tap's process id: a second tap refused the port, or a launcher reusing it, names it. */
  pid: number;
  upstream: UpstreamHealth;
  /** The engine's parts (mirror, store, guard), or null when the mirror is off. */
  engine: EngineHealth | null;
  /** Problems of the engine itself, seen from the relay (it stopped, it does not answer). */
  engineProblems: string[];
  /** Requests the server could not answer (an internal error). */
  internalErrors: number;
}

/** Builds the health body. */
export function healthReport(parts: HealthParts): Record<string, unknown> {
  const { engine } = parts;
  const problems = [...parts.upstream.problems(), ...parts.engineProblems, ...(engine?.problems ?? [])];
  return {
    status: problems.length === 0 ? "ok" : "degraded",
    problems,
    version: parts.version,
    runtime: parts.runtime,
    pid: parts.pid,
    upstream: parts.upstream.state(),
    mirror: engine === null ? "off" : engine.mirror,
    store: engine === null ? "off" : engine.store,
    guard: engine === null ? "off" : engine.guard,
    internalErrors: parts.internalErrors,
  };
}
