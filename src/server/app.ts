/**
 * The Hono app: the tap's own routes under `/_tap/` (never forwarded, docs/DESIGN.md "Command line") and everything else
 * handed to the forwarder. The only module that imports hono; it opens no socket (runtime/ does).
 *
 * With a viewer: `GET /_tap/` is the page, `GET /_tap/api/…` its data (sessions, one session, search,
 * exports, and `events`, a server-sent event stream of new records), and `POST
 * /_tap/api/sessions/:id/restore` restores a session into Claude Code. Conversations are private: when the
 * tap listens on loopback only, these routes answer only requests addressed to a loopback name (the Host
 * header), which keeps a web page that rebinds its own domain to 127.0.0.1 from reading them; when it
 * listens beyond loopback, every `/_tap/` route but the bare health status needs the token. Before any
 * of that, a request a web page made for another site or origin is refused (request-guard.ts). The one
 * route that writes also takes only a JSON body, which a cross-site form cannot send.
 */
import { type Context, Hono } from "hono";
import type { ViewerDeps } from "../viewer/deps.ts";
import { ACCESS_COOKIE, accessCookieValue, carriesToken, crossSiteRefusal, hostName, offersToken, type RequestFacts, sameSecret } from "./request-guard.ts";
import { TokenGate } from "./token-gate.ts";

export { hostName };

/** What the app serves. */
export interface AppDeps {
  forward: (request: Request) => Promise<Response>;
  health: () => Promise<Record<string, unknown>> | Record<string, unknown>;
  viewer?: ViewerDeps;
  /** Hears an error thrown while answering (the answer is a bare 500; nothing of the request is printed). */
  onError?: (error: unknown) => void;
  /**
   * The token every `/_tap/` route but the bare health status requires, or null for none. A tap whose
   * viewer answers any host (bound beyond loopback) without a token serves no `/_tap/` route but health.
   */
  token?: string | null;
  /** Host names (lower case, no port) the tap answers as, for the Origin check; null: any. Default: the viewer's. */
  allowedHosts?: ReadonlySet<string> | null;
  /** What slows down a client guessing the token (default: one of the app's own). */
  tokenGate?: TokenGate;
  /** Hears each wrong token: the client's address and its counts, never the guess. */
  onTokenFailure?: (fields: { peer: string; failures: number; waitMs: number }) => void;
}

/** The client's address, as the runtime adapter hands it over (`app.fetch(request, { peer })`), or "unknown". */
function peerOf(c: Context): string {
  const peer = (c.env as { peer?: unknown } | undefined)?.peer;
  return typeof peer === "string" && peer !== "" ? peer : "unknown";
}

/** Headers every viewer response carries. */
const PRIVATE = { "cache-control": "no-store", "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };

/** The headers and place of a request, as the guards read them. */
function factsOf(c: Context): RequestFacts {
  const h = (name: string) => c.req.header(name) ?? null;
  return {
    method: c.req.method,
    path: c.req.path,
    host: h("host"),
    origin: h("origin"),
    secFetchSite: h("sec-fetch-site"),
    secFetchMode: h("sec-fetch-mode"),
    authorization: h("authorization"),
    cookie: h("cookie"),
  };
}

/** An Anthropic-shaped error answer. */
function apiError(c: Context, status: 401 | 403 | 429, type: string, message: string, headers: Record<string, string> = {}): Response {
  return c.json({ type: "error", error: { type, message: `sessiontap: ${message}` } }, status, { ...PRIVATE, ...headers });
}

/** Builds the app; hand `app.fetch` to a runtime adapter. */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  const viewer = deps.viewer;
  const allowedHosts = deps.allowedHosts !== undefined ? deps.allowedHosts : (viewer?.allowedHosts ?? null);
  const token = deps.token ?? null;
  // Open to any host and without a token, the tap's own routes would hand every conversation to the network.
  const locked = token === null && allowedHosts === null && viewer !== undefined;
  // Hono's own handler prints the error with the request's path and query (and Bun adds pages of source).
  app.onError((error, c) => {
    deps.onError?.(error);
    return c.json({ type: "error", error: { type: "api_error", message: "sessiontap: internal error" } }, 500);
  });
  app.use("*", async (c, next) => {
    const refusal = crossSiteRefusal(factsOf(c), allowedHosts);
    if (refusal !== null) return apiError(c, 403, "permission_error", refusal);
    await next();
  });
  const gate = deps.tokenGate ?? new TokenGate();
  /**
   * Whether the request carries the token: "yes"; "no" (it offers none, or a wrong one: counted); or the
   * seconds its client must still wait before a try is read (docs/RELIABILITY.md "Trust boundaries").
   */
  const tokenOf = (c: Context, offered = offersToken(factsOf(c)), right = () => carriesToken(factsOf(c), token!)): "yes" | "no" | number => {
    if (token === null || !offered) return "no";
    const peer = peerOf(c);
    const wait = gate.waitMs(peer);
    if (wait > 0) return Math.ceil(wait / 1000);
    if (right()) {
      gate.succeeded(peer);
      return "yes";
    }
    deps.onTokenFailure?.({ peer, ...gate.failed(peer) });
    return "no";
  };
  const authorized = (c: Context) => tokenOf(c) === "yes";
  const slowedDown = (c: Context, seconds: number) =>
    apiError(c, 429, "rate_limit_error", `too many wrong tokens from this client; try again in ${seconds} s`, { "retry-after": String(seconds) });
  // A foreign Host is a page that rebound its own domain to the tap: it reads the status, never the paths
  // and session ids the rest of health carries (the Host check of the viewer, applied here too).
  const ownHost = (c: Context) => allowedHosts === null || allowedHosts.has(hostName(c.req.header("host")));
  app.get("/_tap/health", async (c) => {
    const health = await deps.health();
    return c.json((token === null && ownHost(c)) || authorized(c) ? health : { status: health.status });
  });
  app.get("/_tap/login", (c) => {
    const given = c.req.query("token") ?? "";
    const verdict = tokenOf(c, given !== "", () => sameSecret(given, token!));
    if (typeof verdict === "number") return slowedDown(c, verdict);
    if (verdict !== "yes") {
      return c.html(loginPage("That is not this tap's token."), 401, { ...PRIVATE, "content-security-policy": LOGIN_CSP });
    }
    const cookie = `${ACCESS_COOKIE}=${accessCookieValue(token!)}; HttpOnly; SameSite=Strict; Path=/_tap`;
    return c.body(null, 303, { ...PRIVATE, location: "/_tap/", "set-cookie": cookie });
  });
  const tokenGuard = async (c: Context, next: () => Promise<void>) => {
    if (locked) return apiError(c, 403, "permission_error", "this tap listens beyond loopback without a token; its own routes are closed");
    const verdict = token === null ? "yes" : tokenOf(c);
    if (typeof verdict === "number") return slowedDown(c, verdict);
    if (verdict !== "yes") {
      const why = "this tap's own routes need its token: send Authorization: Bearer <token>, or open the login link its startup printed";
      if (c.req.method === "GET" && c.req.path === "/_tap/") return c.html(loginPage(why), 401, { ...PRIVATE, "content-security-policy": LOGIN_CSP });
      return apiError(c, 401, "authentication_error", why, { "www-authenticate": 'Bearer realm="sessiontap"' });
    }
    await next();
  };
  app.use("/_tap/*", tokenGuard);
  app.use("/_tap", tokenGuard);
  if (viewer !== undefined) mountViewer(app, viewer);
  app.all("/_tap/*", (c) => c.json({ type: "error", error: { type: "not_found_error", message: "sessiontap: no such tap route" } }, 404));
  app.all("/_tap", (c) => c.redirect("/_tap/", 302));
  app.all("*", (c) => deps.forward(c.req.raw));
  return app;
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
    const headers: Record<string, string> = {
      ...PRIVATE,
      "content-type": out.type,
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
    };
    if (out.status === 200) headers["content-disposition"] = `attachment; filename="${out.filename.replace(/[^A-Za-z0-9._-]/g, "_")}"`;
    return c.body(out.body, out.status, headers);
  });
  app.get("/_tap/api/search", async (c) => json(c, await viewer.search(c.req.query("q") ?? "")));
  app.post("/_tap/api/sessions/:id/restore", async (c) => {
    // A request another site made was refused before any route (request-guard.ts); a form cannot send JSON.
    if (!/^application\/json\b/i.test(c.req.header("content-type") ?? "")) return json(c, { error: "sessiontap: restore takes a JSON body" }, 415);
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return json(c, { error: "sessiontap: the body is not JSON" }, 400);
    }
    const options = body as { dryRun?: unknown; force?: unknown } | null;
    if (
      typeof options !== "object" || options === null || typeof options.dryRun !== "boolean" ||
      (options.force !== undefined && typeof options.force !== "boolean")
    ) {
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

/** The login page's policy: nothing loaded, the form posts only here. */
const LOGIN_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'";

/** A page asking for the token (its form opens the login link). */
function loginPage(why: string): string {
  const text = why.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>sessiontap</title></head>
<body style="font:15px system-ui,sans-serif;max-width:40em;margin:3em auto"><h1>sessiontap</h1><p>${text}</p>
<form method="get" action="/_tap/login"><label>Token <input name="token" type="password" autocomplete="off" autofocus></label> <button>Open the viewer</button></form></body></html>
`;
}
