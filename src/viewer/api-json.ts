/**
 * The JSON the viewer's API answers with, named once for both ends: api.ts builds these shapes and the
 * browser client (client/) reads them, so a field renamed on one side fails the type check on the other.
 * Types only: nothing here exists at run time.
 */
import type { RestoreOutcome } from "../restore/restore-session.ts";
import type { ListEntry } from "../storage/mirror-reader.ts";
import type { LiveBatch } from "./live.ts";

export type { SearchHit } from "../transcript/search.ts";
export type { RestoreOutcome } from "../restore/restore-session.ts";
export type { TokenCounts } from "../usage/tokens.ts";

/** The guard's alert on a session: what became of Claude Code's transcript, since when, and the command that brings it back. */
export interface GuardAlert {
  state: string;
  since: string;
  command: string;
}

/** A session as `api/sessions` lists it: the `list --json` object with the guard's alert (null: none). */
export type ViewerSession = ListEntry & { guard: GuardAlert | null };

/** `api/sessions/:id`: the session's facts, its conversation as HTML, and the uuid its reading path ends at. */
export interface SessionView {
  session: ViewerSession;
  tail: string | null;
  /** Rendered and escaped by the tap. */
  html: string;
  prices: { source: string; checked: string };
}

/** `POST api/sessions/:id/restore`: done (or would be), or refused with why (and the plan when there was one). */
export type RestoreReply =
  | { ok: true; outcome: RestoreOutcome; lines: string[]; resume: string }
  | { ok: false; error: string; outcome: RestoreOutcome | null };

/** One record of a live batch: where it hangs in the tree, and its HTML (rendered and escaped by the tap). */
export interface LiveRecord {
  uuid: string | null;
  parentUuid: string | null;
  type: unknown;
  html: string;
}

/** The data of an `api/events` `records` event: new records of one conversation of one session. */
export interface LiveEvent {
  dir: string;
  sessionId: string | null;
  scope: LiveBatch["scope"];
  agent: string | null;
  records: LiveRecord[];
}
