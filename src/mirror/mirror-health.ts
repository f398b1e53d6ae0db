/**
 * The mirror's and the store's parts of `/_tap/health` (docs/DESIGN.md "Health and exit"), built where they
 * live: in the engine. The relay adds the upstream's part and decides `status`.
 */
import type { CommitSink } from "../writer/commit-sink.ts";
import type { Mirror } from "./mirror.ts";

/** The store's problems, from its own health. */
export function storeProblems(store: CommitSink): string[] {
  const h = store.health();
  const out: string[] = [];
  if (h.status === "unreachable") out.push(`store: unreachable (${Number(h.spooled ?? 0)} commits spooled; ${String(h.lastError ?? "")})`);
  if (h.status === "misconfigured") {
    out.push(`store: misconfigured: ${String(h.misconfigured ?? h.lastError ?? "")}; fix SESSIONTAP_STORE (${Number(h.spooled ?? 0)} commits spooled)`);
  }
  if (Number(h.dropped ?? 0) > 0) out.push(`store: ${Number(h.dropped)} commits could not be spooled and are not in the store`);
  if (Number(h.setAside ?? 0) > 0) out.push(`store: ${Number(h.setAside)} commits refused by the store, kept in its spool's failed-*.jsonl`);
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
    sessionsInMemory: mirror.sessionsInMemory,
  };
}
