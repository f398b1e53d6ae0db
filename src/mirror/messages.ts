// What the relay and the mirror engine say to each other (docs/DESIGN.md "Off the relay path").
import type { GuardAlert } from "../guard/guard.ts";
import type { EngineHealth } from "./health.ts";
import type { EventFields } from "../storage/events-log.ts";
import type { Framing, Provider } from "../protocol/providers/recognise.ts";
import type { IdentityHeaders } from "../protocol/session-id.ts";
import type { MirrorOptions, MirrorStats, Replayed, Unwritten } from "./mirror.ts";

/** The settings the engine is built from (a Config's mirror part, plain data: it crosses into the Worker). */
export interface EngineSettings extends Pick<MirrorOptions, "root" | "maxBytes" | "retentionDays" | "maxSessions" | "includeThinking" | "sync"> {
  /** Mirror side requests into `side/` (SESSIONTAP_SIDE_REQUESTS, default true). */
  sideRequests: boolean;
  /** The tap's version, written into each record's envelope. */
  version: string;
  claudeDir: string;
  lockWaitMs: number;
  maxQueued: number;
  /** Largest answer (and request body) the mirror keeps; past it an answer is kept truncated, marked. */
  maxMessageBytes: number;
  /** The shared store's URL, or null. */
  store: string | null;
  /** Write only to the store (SESSIONTAP_STORE_ONLY). */
  storeOnly: boolean;
  /** Guard setting: true on, false off, null on when the Claude Code directory exists. */
  guard: boolean | null;
  /** The guard's timings and limits (tests shorten them). */
  guardTimings: Record<string, number>;
  /** Where unwritten commits go at stop when the root refuses them: the system temp dir, or this one. */
  spoolTmpDir: string | null;
  /** Where secrets are replaced (SESSIONTAP_REDACT; default shared): in the store, in the tree too (all), nowhere (off). */
  redact?: "shared" | "all" | "off";
  /** The root's secret sessions are bound under (null: not bound): docs/DESIGN.md "Who a session belongs to". */
  bindingKey?: string | null;
  /** Names the tap's engine in its writer locks, the same for an engine started in place of a dead one (which reuses its locks). */
  lockHolder?: string;
}

/**
 * How a response body that was being followed stopped before its end: the client left, the upstream failed,
 * or the relay stopped copying it because the engine had too much left to read (the client's bytes never
 * wait for the engine: docs/DESIGN.md "Off the relay path").
 */
export type CutBy = "client" | "upstream" | "behind";

/** The queries the tap's owner (the serve command, the tests) makes of the engine. */
export interface EngineQueries {
  /** Health's mirror, store and guard parts, and their problems. */
  health: { arg: null; value: EngineHealth };
  /** Tries every waiting commit once more and waits for writes in flight, at most `arg` ms. */
  flush: { arg: number; value: null };
  /** The mirror's counters. */
  stats: { arg: null; value: MirrorStats & { following: number } };
  /** Runs the retention sweep if due and waits for it. */
  sweep: { arg: null; value: null };
  /** What the guard knows of a session. */
  guardInspect: { arg: string; value: unknown };
  /** The guard's own health. */
  guardHealth: { arg: null; value: unknown };
  /** Has the guard look at a session's transcript now (it was just restored), and waits for the look. */
  guardLookNow: { arg: string; value: null };
  /** Flushes, saves what could not be written to a spool, and closes the store: the engine's last act. */
  stop: { arg: number; value: Unwritten };
}

/** What the relay recognised of a mirrored request (docs/DESIGN.md "Providers"): its API, and the model its path names (null: the body's). */
export interface RequestFacts {
  provider: Provider;
  model: string | null;
}

/** The mirror's copy of a request body: its bytes, or why it has none. */
export type BodyCopy = { bytes: Uint8Array } | { skipped: string };

/** A message to the engine. */
export type ToEngine =
  | { t: "begin"; id: number; at: number; identity: IdentityHeaders; request?: RequestFacts }
  /** The request's bytes (transferred), or why there are none for the mirror. */
  | { t: "body"; id: number; copy: BodyCopy }
  /** `coded`: the body reaches the client still content-encoded (fetch did not decode it), so the mirror cannot read it. */
  | { t: "head"; id: number; status: number; requestId: string | null; framing: Framing; coded: boolean }
  /** Response bytes of several requests: `index` holds pairs (id, byte count), in order, for `bytes`. */
  | { t: "chunks"; bytes: Uint8Array; index: number[] }
  /** The body ended normally. */
  | { t: "end"; id: number }
  | { t: "cut"; id: number; by: CutBy }
  /** A failure on the relay's side of response `id` (null: of no one response): counted, and that response dropped. */
  | { t: "fail"; id: number | null; stage: "stream" | "relay"; error: string }
  | { t: "log"; action: string; fields: EventFields }
  /**
   * A request forwarded and not mirrored (docs/DESIGN.md "Nothing forwarded unseen"): its path's shape, why,
   * and its body, counted when it looks like a conversation; or one the tap refused to forward (`refused`).
   */
  | { t: "unseen"; shape: string; reason: string; copy: BodyCopy; refused?: boolean }
  | { t: "query"; q: number; name: keyof EngineQueries; arg: unknown };

/** A message from the engine. */
export type FromEngine =
  | { t: "ready"; replayed: Replayed; guard: boolean }
  /** The engine could not start, or stopped on an error it could not contain: nothing more is mirrored. */
  | { t: "failed"; error: string }
  /** The engine has read this many more response bytes: the relay counts what it sent and is not yet read. */
  | { t: "ack"; bytes: number }
  | { t: "reply"; q: number; value?: unknown; error?: string }
  | { t: "stderr"; line: string }
  /** Mirror files written since the last hint (the viewer's live updates). */
  | { t: "wrote"; paths: string[] }
  /** The guard's alerts changed: all of them now (the viewer's banners). */
  | { t: "alerts"; alerts: GuardAlert[] };

/** The first message a worker receives: what to build. */
export interface EngineStart {
  t: "start";
  settings: EngineSettings;
  /** A test's own filesystem and clock for the engine (docs/DESIGN.md "Where the engine runs"). */
  seams?: EngineSeams;
}

/**
 * A module whose export `name`, called in the Worker with `port`, returns the engine's filesystem and clock
 * (`{ fs?: FsAdapter; clock?: () => number }`) and is driven through that port: a test's way to fail
 * writes on cue in the Worker that serve runs.
 */
export interface EngineSeams {
  module: string;
  name: string;
  port: MessagePort;
}
