// What the relay posts to the mirror engine and back (docs/DESIGN.md "Off the relay path"); queries are calls (utils/worker-call.ts).
import type { GuardAlert, GuardOptions } from "../guard/guard.ts";
import type { EventFields } from "../storage/events-log.ts";
import type { Framing, Provider } from "../protocol/providers/recognise.ts";
import type { IdentityHeaders } from "../protocol/session-id.ts";

/** The tap's config as the engine reads it (its own names), and what the start adds: plain data, it crosses into the Worker. */
export interface EngineSettings {
  mirrorDir: string;
  claudeDir: string;
  maxBytes: number;
  retentionDays: number;
  maxSessions: number;
  includeThinking: boolean;
  sideRequests: boolean;
  lockWaitMs: number;
  maxQueued: number;
  maxMessageBytes: number;
  store: string | null;
  storeOnly: boolean;
  redact: "shared" | "all" | "off";
  guard: boolean | null;
  version: string;
  /** Null: sessions are not bound (docs/DESIGN.md "Who a session belongs to"). */
  bindingKey: string | null;
  /** The same for an engine started in place of a dead one, which reuses its locks. */
  lockHolder?: string;
  guardTimings?: Partial<GuardOptions>;
  /** Where unwritten commits go at stop when the root refuses them (null: the system temp dir). */
  spoolTmpDir: string | null;
  sync?: boolean;
}

/** The engine's Worker is built from this (its first message); `seams`: a test's filesystem and clock (docs/DESIGN.md "Where the engine runs"). */
export type EngineStart = { settings: EngineSettings; seams?: EngineSeams };

/** A module whose export `name`, called in the Worker with `port`, returns `{ fs?, clock? }` for the engine, driven through that port. */
export type EngineSeams = { module: string; name: string; port: MessagePort };

/** `behind`: the relay stopped copying because the engine had too much left to read. */
export type CutBy = "client" | "upstream" | "behind";

/** What the relay recognised of a mirrored request: its API, and the model its path names (null: the body's). */
export type RequestFacts = { provider: Provider; model: string | null };

export type BodyCopy = { bytes: Uint8Array } | { skipped: string };

export type ToEngine =
  | { t: "begin"; id: number; at: number; identity: IdentityHeaders; request?: RequestFacts }
  | { t: "body"; id: number; copy: BodyCopy }
  /** `coded`: the body reaches the client still content-encoded (fetch did not decode it), so the mirror cannot read it. */
  | { t: "head"; id: number; status: number; requestId: string | null; framing: Framing; coded: boolean }
  /** Response bytes of several requests: `index` holds pairs (id, byte count), in order. */
  | { t: "chunks"; bytes: Uint8Array; index: number[] }
  | { t: "end"; id: number }
  | { t: "cut"; id: number; by: CutBy }
  /** A failure on the relay's side of response `id` (null: of no one response). */
  | { t: "fail"; id: number | null; stage: "stream" | "relay"; error: string }
  | { t: "log"; action: string; fields: EventFields }
  /** Forwarded and not mirrored (docs/DESIGN.md "Nothing forwarded unseen"), or refused. */
  | { t: "unseen"; shape: string; reason: string; copy: BodyCopy; refused?: boolean };

export type FromEngine =
  | { t: "ack"; bytes: number }
  | { t: "stderr"; line: string }
  | { t: "alerts"; alerts: GuardAlert[] };
