// Every failure of the mirror declared once (docs/DESIGN.md "Health and exit"): its counter or alarm, its events-log action, its stderr
// lines (the first at once, then at most one a minute, and one when it works again) and its health problem; the rest is derived.
import type { EventFields } from "../storage/events-log.ts";
import type { StoreHealth } from "../store/pg-sink.ts";
import { Alarm } from "../utils/alarm.ts";
import { plural } from "../utils/describe-error.ts";

type Said = (first: boolean, n: number, f: EventFields) => string;

export interface Counted {
  /** Logged with the total so far under the kind's name. */
  action?: string;
  said?: Said;
  /** A health problem while the total is above 0. */
  health?: (n: number) => string;
}

export const COUNTED = {
  skipped: { action: "skip" },
  truncated: { action: "truncated" },
  repaired: { action: "repair" },
  errors: { action: "error" },
  dropped: { action: "drop", health: (n) => `${plural(n, "commit")} dropped since start (the queue was full): those answers are not in the mirror` },
  gaveUp: {
    action: "give-up",
    said: (first, n, f) =>
      first
        ? `sessiontap: the mirror engine fell behind the relay and gave up on an answer of ${f.dir}; its client got every byte, and the answer is written from that session's next request`
        : `sessiontap: the mirror engine still falls behind the relay: ${n} answers given up since start, each written from its session's next request`,
    health: (n) => `${plural(n, "answer")} given up since start (the mirror engine fell behind the relay): each is written from the next request's history`,
  },
  failedResponses: { health: (n) => `${plural(n, "response")} could not be mirrored (internal error; see the events log)` },
  borrowed: {
    action: "session-split",
    said: (first, n, f) =>
      first
        ? `sessiontap: a request carried the id of session ${f.dir} with another ${
          f.why === "cwd" ? "working directory" : "credential"
        } than the one that opened it; it is mirrored as a session of its own (${f.as}), never as part of ${f.dir}`
        : `sessiontap: ${n} requests so far carried another owner's session id; each is mirrored as a session of its own (the events log: session-split)`,
  },
} satisfies Record<string, Counted>;

export type CountedKind = keyof typeof COUNTED;

interface Raised {
  said: Said;
  /** `n`: the failed attempts it ends. */
  recovered: (n: number, f: EventFields) => string;
}

/** Failing until they work again. */
const RAISED = {
  writes: {
    said: (first, n, f) =>
      first
        ? `sessiontap: mirror write failed in ${f.dir} (${f.error}). The client is unaffected; ${
          plural(Number(f.queued), "commit")
        } wait in memory and are retried. Fix that directory (permissions, free space), or run: sessiontap doctor`
        : `sessiontap: mirror writes still failing (${n} attempts) in ${f.dir} (${f.error}); ${plural(Number(f.queued), "commit")} waiting`,
    recovered: (n, f) => `sessiontap: mirror writes work again in ${f.dir} (after ${plural(n, "failed attempt")}); every waiting commit is written`,
  },
  eventsLog: {
    said: (first, _n, f) =>
      first
        ? `sessiontap: events log ${f.path} not written (${f.error}); the mirror itself carries on`
        : `sessiontap: events log ${f.path} still not written (${f.error})`,
    recovered: (_n, f) => `sessiontap: events log ${f.path} written again`,
  },
  locks: {
    said: (first, n, f) =>
      first
        ? `sessiontap: writer lock of ${f.dir} could not be released (${f.error}); the tap retries, and its own next write there reuses it`
        : `sessiontap: writer locks still not released (${n} attempts, ${f.waiting} waiting; ${f.error})`,
    recovered: (n) => `sessiontap: writer locks released again (after ${plural(n, "failed attempt")})`,
  },
} satisfies Record<string, Raised>;

export type RaisedKind = keyof typeof RAISED;

/** An alarm per raised kind, and per counted kind that says something (for its reminders), made when first asked for. */
export class MirrorAlarms {
  private readonly alarms = new Map<string, Alarm>();

  constructor(private readonly clock: () => number, private readonly stderr: (line: string) => void) {}

  raise(kind: RaisedKind, f: EventFields): void {
    this.get(kind).fail(String(f.error), (first, n) => RAISED[kind].said(first, n, f));
  }

  clear(kind: RaisedKind, f: EventFields = {}): void {
    this.get(kind).ok((n) => RAISED[kind].recovered(n, f));
  }

  get(kind: RaisedKind | CountedKind): Alarm {
    let alarm = this.alarms.get(kind);
    if (alarm === undefined) this.alarms.set(kind, alarm = new Alarm(this.clock, this.stderr));
    return alarm;
  }
}

/** A write that has not finished this long is a problem even before it fails (a hung disk). */
const STALLED_MS = 2000;

export function mirrorProblems(
  stats: Record<CountedKind, number> & { queued: number },
  alarms: MirrorAlarms,
  waitedMs: number,
  locksWaiting: number,
): string[] {
  const writes = alarms.get("writes");
  const out: string[] = [];
  // A commit is queued from the moment it is handed over: waiting is a problem once a write failed, or past any ordinary write.
  if (stats.queued > 0 && (writes.failing || waitedMs >= STALLED_MS)) {
    const why = writes.state().lastError ?? `a write has not finished for ${(waitedMs / 1000).toFixed(1)} s`;
    out.push(`${plural(stats.queued, "commit")} waiting to be written (${why})`);
  } else if (writes.failing) out.push(`the last write failed (${writes.state().lastError})`);
  for (const [kind, row] of Object.entries(COUNTED) as [CountedKind, Counted][]) {
    if (row.health !== undefined && stats[kind] > 0) out.push(row.health(stats[kind]));
  }
  if (locksWaiting > 0) out.push(`${plural(locksWaiting, "writer lock")} not released yet (${alarms.get("locks").state().lastError ?? "retrying"}); retrying`);
  if (alarms.get("eventsLog").failing) out.push(`the events log is not being written (${alarms.get("eventsLog").state().lastError})`);
  return out.map((p) => `mirror: ${p}`);
}

export function storeProblems(h: StoreHealth): string[] {
  const out: string[] = [];
  if (h.status === "unreachable") out.push(`store: unreachable (${h.spooled} commits spooled; ${h.lastError ?? ""})`);
  if (h.status === "misconfigured") {
    out.push(`store: misconfigured: ${h.misconfigured ?? h.lastError ?? ""}; fix SESSIONTAP_STORE (${h.spooled} commits spooled)`);
  }
  if (h.dropped > 0) out.push(`store: ${h.dropped} commits could not be spooled and are not in the store`);
  if (h.setAside > 0) out.push(`store: ${h.setAside} commits refused by the store, kept in its spool's failed-*.jsonl`);
  return out;
}
