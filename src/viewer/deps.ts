/**
 * What the viewer's routes serve (routes.ts, the sub-app the server mounts at `/_tap/`), wherever the
 * viewer's data is read. Defined here, by the viewer, so the server depends on the viewer and not the
 * other way round (docs/DESIGN.md "Map").
 */
import type { LiveEvent } from "./api-json.ts";

/** A JSON answer with its status. */
export interface Answer {
  status: 200 | 400 | 404 | 409;
  body: unknown;
}

/** An export: the text, its type and file name (or a plain-text refusal). */
export interface ExportAnswer {
  status: 200 | 400 | 404 | 409;
  body: string;
  type: string;
  filename: string;
}

/** What the viewer routes serve (see api.ts and page.ts). */
export interface ViewerDeps {
  /** Host names (lower case, no port) the viewer answers to; null: any (the tap was bound beyond loopback on purpose). */
  allowedHosts: ReadonlySet<string> | null;
  /** The page, its one script carrying `nonce`. */
  page(nonce: string): Promise<string>;
  sessions(): Promise<unknown>;
  session(id: string): Promise<Answer>;
  search(query: string): Promise<unknown>;
  exportSession(id: string, format: string): Promise<ExportAnswer>;
  /** Restores a session into Claude Code (a dry run says what would be written). */
  restore(id: string, options: { dryRun: boolean; force: boolean }): Promise<Answer>;
  /** Hands `listener` each batch of new records from now on, until the function it resolves with is called. */
  subscribe(listener: (event: LiveEvent) => void): Promise<() => void>;
  /** Aborted when the tap stops: open event streams end then, so they do not hold the drain. */
  stopped: AbortSignal;
}
