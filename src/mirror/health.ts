// The engine's part of `GET /_tap/health` (docs/DESIGN.md "Health and exit"): the mirror's, the store's and the guard's.
import type { Guard, GuardHealth } from "../guard/guard.ts";
import type { StoreHealth } from "../store/pg-sink.ts";
import type { Mirror } from "./mirror.ts";
import { mirrorProblems } from "./problems.ts";

export const HEALTH_WAIT_MS = 2000;

export interface EngineHealth {
  problems: string[];
  mirror: Record<string, unknown>;
  store: StoreHealth | "off";
  guard: GuardHealth | "off";
}

export function engineHealth(mirror: Mirror, guard: Guard | null, notMirrored: unknown): EngineHealth {
  const store = mirror.deps.store?.health() ?? null;
  const problems = mirrorProblems(mirror.stats, mirror.alarms, mirror.queue.longestWaitMs(), mirror.locks.waiting);
  return {
    problems: [...problems, ...(store === null ? [] : storeProblems(store)), ...(guard?.problems() ?? [])],
    mirror: {
      root: mirror.root,
      ...mirror.stats,
      writes: mirror.alarms.get("writes").state(),
      eventsLog: mirror.alarms.get("eventsLog").state(),
      eventsLogFailures: mirror.events.failures,
      sessionsInMemory: mirror.writer.size,
      notMirrored,
    },
    store: store ?? "off",
    guard: guard?.health() ?? "off",
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
