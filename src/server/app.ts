/**
 * The Hono app: the tap's own routes under `/_tap/` (never forwarded, SPEC §2) and everything else
 * handed to the forwarder. The only module that imports hono; it opens no socket (runtime/ does).
 *
 * With a viewer: `GET /_tap/` is the page, `GET /_tap/api/…` its data (sessions, one session, search,
 * exports, and `events`, a server-sent event stream of new records), and `POST
 * /_tap/api/sessions/:id/restore` restores a session into Claude Code. Conversations are private: when the
 * tap listens on loopback only, these routes answer only requests addressed to a loopback name (the Host
 * header), which keeps a web page that rebinds its own domain to 127.0.0.1 from reading them. The one route
 * that writes also refuses a request another site made (its `Origin` or `Sec-Fetch-Site` says so) and takes
 * only a JSON body, which a cross-site form cannot send and a cross-site script cannot send unasked.
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
  /** Restores a session into Claude Code (a dry run says what would be written). */
  restore(id: string, options: { dryRun: boolean; force: boolean }): Promise<{ status: 200 | 400 | 404 | 409; body: unknown }>;
  events(signal: AbortSignal): ReadableStream<Uint8Array>;
}

/** What the app serves. */
export interface AppDeps {
  forward: (request: Request) => Promise<Response>;
  health: () => Record<string, unknown>;
  viewer?: ViewerDeps;
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
  app.get("/_tap/health", (c) => c.json(deps.health()));
  const viewer = deps.viewer;
  if (viewer !== undefined) mountViewer(app, viewer);
  app.all("/_tap/*", (c) => c.json({ type: "error", error: { type: "not_found_error", message: "sessiontap: no such tap route" } }, 404));
  app.all("/_tap", (c) => c.redirect("/_tap/", 302));
  app.all("*", (c) => deps.forward(c.req.raw));
  return app;
}

/**
 * Why a state-changing request did not come from the viewer's own page, or null when it may have: a browser
 * names the page that made a request in `Origin` and `Sec-Fetch-Site`; a request without either comes from
 * a program on this machine (curl), not from a web page.
 */
export function crossSite(headers: { origin?: string; fetchSite?: string; host?: string }): string | null {
  if (headers.fetchSite !== undefined && headers.fetchSite !== "same-origin") return `a ${headers.fetchSite} request (Sec-Fetch-Site)`;
  if (headers.origin === undefined) return null;
  let origin: URL;
  try {
    origin = new URL(headers.origin);
  } catch {
    return `an opaque Origin (${headers.origin.slice(0, 40)})`;
  }
  const host = (headers.host ?? "").trim().toLowerCase();
  return origin.host.toLowerCase() === host && (origin.protocol === "http:" || origin.protocol === "https:") ? null : `a request from ${origin.origin}`;
}

/** The viewer's routes. */
function mountViewer(app: Hono, viewer: ViewerDeps): void {
  const json = (c: Context, body: unknown, status: 200 | 400 | 403 | 404 | 409 | 415 = 200) => c.json(body, status, PRIVATE);
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
  app.post("/_tap/api/sessions/:id/restore", async (c) => {
    const refused = crossSite({ origin: c.req.header("origin"), fetchSite: c.req.header("sec-fetch-site"), host: c.req.header("host") });
    if (refused !== null) return json(c, { error: `sessiontap: restore refused ${refused}: only the viewer's own page may restore` }, 403);
    if (!/^application\/json\b/i.test(c.req.header("content-type") ?? "")) return json(c, { error: "sessiontap: restore takes a JSON body" }, 415);
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return json(c, { error: "sessiontap: the body is not JSON" }, 400);
    }
    const options = body as { dryRun?: unknown; force?: unknown } | null;
    if (typeof options !== "object" || options === null || typeof options.dryRun !== "boolean" || (options.force !== undefined && typeof options.force !== "boolean")) {
      return json(c, { error: 'sessiontap: restore takes {"dryRun": true|false, "force": true|false}' }, 400);
    }
    const answer = await viewer.restore(c.req.param("id"), { dryRun: options.dryRun, force: options.force === true });
    return json(c, answer.body, answer.status);
  });
  app.get("/_tap/api/events", (c) =>
    new Response(viewer.events(c.req.raw.signal), {
      headers: { ...PRIVATE, "content-type": "text/event-stream; charset=utf-8" },
    }));
}
