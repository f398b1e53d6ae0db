/**
 * The Hono app: the tap's own routes under `/_tap/` (never forwarded, SPEC §2) and everything else
 * handed to the forwarder. The only module that imports hono; it opens no socket (runtime/ does).
 *
 * With a viewer: `GET /_tap/` is the page, `GET /_tap/api/…` its data (sessions, one session, search,
 * exports, and `events`, a server-sent event stream of new records). Conversations are private: when the
 * tap listens on loopback only, these routes answer only requests addressed to a loopback name (the Host
 * header), which keeps a web page that rebinds its own domain to 127.0.0.1 from reading them.
 */
import { Hono, type Context } from "hono";

/** What the viewer routes serve (see viewer/api.ts and viewer/page.ts). */
export interface ViewerDeps {
  /** Host names (lower case, no port) the viewer answers to; null: any (the tap was bound beyond loopback on purpose). */
  allowedHosts: ReadonlySet<string> | null;
  page(nonce: string): string;
  csp(nonce: string): string;
  sessions(): Promise<unknown>;
  session(id: string): Promise<{ status: 200 | 400 | 404 | 409; body: unknown }>;
  search(query: string): Promise<unknown>;
  exportSession(id: string, format: string): Promise<{ status: 200 | 400 | 404 | 409; body: string; type: string; filename: string }>;
  events(signal: AbortSignal): ReadableStream<Uint8Array>;
}

/** What the app serves. */
export interface AppDeps {
  forward: (request: Request) => Promise<Response>;
  health: () => Record<string, unknown>;
  viewer?: ViewerDeps;
  /** Hears an error thrown while answering (the answer is a bare 500; nothing of the request is printed). */
  onError?: (error: unknown) => void;
}

/** Headers every viewer response carries. */
const PRIVATE = { "cache-control": "no-store", "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };

/** The host name of a Host header, lower case, without its port ("[::1]:8787" → "[::1]"). */
export function hostName(host: string | undefined): string {
  const h = (host ?? "").trim().toLowerCase();
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1);
  const colon = h.indexOf(":");
  return colon < 0 ? h : h.slice(0, colon);
}

/** Builds the app; hand `app.fetch` to a runtime adapter. */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  // Hono's own handler prints the error with the request's path and query (and Bun adds pages of source).
  app.onError((error, c) => {
    deps.onError?.(error);
    return c.json({ type: "error", error: { type: "api_error", message: "sessiontap: internal error" } }, 500);
  });
  app.get("/_tap/health", (c) => c.json(deps.health()));
  const viewer = deps.viewer;
  if (viewer !== undefined) mountViewer(app, viewer);
  app.all("/_tap/*", (c) => c.json({ type: "error", error: { type: "not_found_error", message: "sessiontap: no such tap route" } }, 404));
  app.all("/_tap", (c) => c.redirect("/_tap/", 302));
  app.all("*", (c) => deps.forward(c.req.raw));
  return app;
}

/** The viewer's routes. */
function mountViewer(app: Hono, viewer: ViewerDeps): void {
  const json = (c: Context, body: unknown, status: 200 | 400 | 403 | 404 | 409 = 200) => c.json(body, status, PRIVATE);
  const guard = async (c: Context, next: () => Promise<void>) => {
    if (viewer.allowedHosts !== null && !viewer.allowedHosts.has(hostName(c.req.header("host")))) {
      return json(c, { error: "sessiontap: the viewer answers on a loopback address only (http://127.0.0.1:PORT/_tap/)" }, 403);
    }
    await next();
  };
  app.use("/_tap/", guard);
  app.use("/_tap/api/*", guard);
  app.get("/_tap/", (c) => {
    const nonce = crypto.randomUUID().replace(/-/g, "");
    return c.html(viewer.page(nonce), 200, { ...PRIVATE, "content-security-policy": viewer.csp(nonce) });
  });
  app.get("/_tap/api/sessions", async (c) => json(c, await viewer.sessions()));
  app.get("/_tap/api/sessions/:id", async (c) => {
    const answer = await viewer.session(c.req.param("id"));
    return json(c, answer.body, answer.status);
  });
  app.get("/_tap/api/sessions/:id/export", async (c) => {
    const out = await viewer.exportSession(c.req.param("id"), c.req.query("format") ?? "md");
    const headers: Record<string, string> = { ...PRIVATE, "content-type": out.type, "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'" };
    if (out.status === 200) headers["content-disposition"] = `attachment; filename="${out.filename.replace(/[^A-Za-z0-9._-]/g, "_")}"`;
    return c.body(out.body, out.status, headers);
  });
  app.get("/_tap/api/search", async (c) => json(c, await viewer.search(c.req.query("q") ?? "")));
  app.get("/_tap/api/events", (c) =>
    new Response(viewer.events(c.req.raw.signal), {
      headers: { ...PRIVATE, "content-type": "text/event-stream; charset=utf-8" },
    }));
}
