/**
 * One response's worth of records to add to a conversation: what every writer (the mirror tree, the
 * shared store, the spools) receives, plans against its own lineage and appends. Pure data, JSON-safe,
 * so a spool can keep it on disk and replay it.
 */
import type { Route } from "./classify.ts";
import type { EnvelopeBase } from "./envelope.ts";
import type { HashedMessage } from "./lineage.ts";
import type { Answer } from "./staging.ts";

/** A commit: the request's messages and identity, and the answer (null when there is none to keep). */
export interface CommitJob {
  route: Route;
  /** The request opens a compacted segment of the main conversation. */
  compaction: boolean;
  sessionDir: string;
  agentDir: string | null;
  messages: HashedMessage[];
  base: EnvelopeBase;
  requestTimestamp: string;
  answer: Answer | null;
  /** How the answer ended; `gave-up`: the mirror stopped reading it (docs/DESIGN.md "Off the relay path") and keeps only the request. */
  kind: "complete" | "client-cut" | "upstream-cut" | "gave-up";
  /** Who sent the request (fingerprints: session-binding.ts), when the mirror binds sessions. */
  owner?: { credential: string | null; claims: string | null };
  /** The request carried another owner's session id: this is the session of its own it was given. */
  split?: boolean;
}
