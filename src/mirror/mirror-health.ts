/**
 * The mirror's and the store's parts of `/_tap/health` (docs/DESIGN.md "Health and exit"), built where they
 * live: in the engine. The relay adds the upstream's part and decides `status`.
 */
import type { StoreHealth } from "../store/pg-sink.ts";
import type { Mirror } from "./mirror.ts";

/** The store's problems, from its own health. */
export function storeProblems(h: StoreHealth): string[] {
  const out: string[] = [];
  if (h.status === "unreachable") out.push(`store: unreachable (${h.spooled} commits spooled; ${h.lastError ?? ""})`);
  if (h.dropped > 0) out.push(`store: ${h.dropped} commits could not be spooled and are not in the store`);
  if (h.setAside > 0) out.push(`store: ${h.setAside} commits refused by the store, kept in its spool's failed-*.jsonl`);
  return out;
}

/** The mirror's counters and states, as health shows them. */
export function mirrorHealth(mirror: Mirror): Record<string, unknown> {
  return {
    root: mirror.options.root,
    ...mirror.stats,
    writes: mirror.alarms.writes.state(),
    eventsLog: mirror.alarms.eventsLog.state(),
    eventsLogFailures: mirror.events.failures,
    sessionsInMemory: mirror.writer.size,
  };
}
