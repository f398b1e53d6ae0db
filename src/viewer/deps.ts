/**
 * What the viewer's routes serve, as the server module mounts them (src/server/app.ts: the only module
 * that imports hono). Defined here, by the viewer, so the server depends on the viewer and not the other
 * way round (docs/DESIGN.md "Map").
 */

/** What the viewer routes serve (see api.ts and page.ts). */
export interface ViewerDeps {
  /** Host names (lower case, no port) the viewer answers to; null: any (the tap was bound beyond loopback on purpose). */
  allowedHosts: ReadonlySet<string> | null;
  page(nonce: string): string;
  csp(nonce: string): string;
  sessions(): Promise<unknown>;
  session(id: string): Promise<{ status: 200 | 400 | 404 | 409; body: unknown }>;
  search(query: string): Promise<unknown>;
  exportSession(id: string, format: string): Promise<{ status: 200 | 400 | 404 | 409; body: string; type: string; filename: string }>;
  /** Restores a session into Claude Code (a dry run says what would be written). */
  restore(id: string, options: { dryRun: boolean; force: boolean }): Promise<{ status: 200 | 400 | 404 | 409; body: unknown }>;
  events(signal: AbortSignal): ReadableStream<Uint8Array>;
}
