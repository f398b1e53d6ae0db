/**
 * The Hono app: the tap's own routes under `/_tap/` (never forwarded, SPEC §2) and everything else
 * handed to the forwarder. The only module that imports hono; it opens no socket (runtime/ does).
 */
import { Hono } from "hono";

/** What the app serves. */
export interface AppDeps {
  forward: (request: Request) => Promise<Response>;
  health: () => Record<string, unknown>;
}

/** Builds the app; hand `app.fetch` to a runtime adapter. */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  app.get("/_tap/health", (c) => c.json({ status: "ok", ...deps.health() }));
  app.all("/_tap/*", (c) => c.json({ type: "error", error: { type: "not_found_error", message: "sessiontap: no such tap route" } }, 404));
  app.all("/_tap", (c) => c.redirect("/_tap/", 302));
  app.all("*", (c) => deps.forward(c.req.raw));
  return app;
}
