/**
 * The Hono app: the tap's own routes under `/_tap/` (never forwarded, docs/DESIGN.md "Command line") and
 * everything else handed to the forwarder. It opens no socket (runtime/ does); with viewer/routes.ts, the
 * only module that imports hono.
 *
 * With a viewer, its routes (viewer/routes.ts) are mounted at `/_tap/`. Conversations are private: when
 * the tap listens beyond loopback, every `/_tap/` route but the bare health status needs the token
 * (Hono's bearer-auth, or the cookie the login link sets); on loopback the viewer answers only loopback
 * names. Before any of that, a request a web page made for another site or origin is refused
 * (request-guard.ts).
 */
import { type Context, Hono, type Next } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { getCookie, setCookie } from "hono/cookie";
import { HTTPException } from "hono/http-exception";
import { secureHeaders } from "hono/secure-headers";
import { apiError } from "../protocol/api-error.ts";
import { type ViewerDeps, viewerRoutes } from "../viewer/routes.ts";
import { ACCESS_COOKIE, accessCookieValue, crossSiteRefusal, type RequestFacts, sameSecret } from "./request-guard.ts";
import { hostName } from "../viewer/hosts.ts";
import { TokenGate } from "./token-gate.ts";

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

/**
 * Headers of every `/_tap/` answer (Hono's secure-headers): nothing loaded from elsewhere, framed or sniffed,
 * no referrer. A route with a policy of its own (the viewer's page) keeps it.
 */
const TAP_HEADERS = secureHeaders({
  contentSecurityPolicy: { defaultSrc: ["'none'"], styleSrc: ["'unsafe-inline'"], formAction: ["'self'"], frameAncestors: ["'none'"] },
  strictTransportSecurity: false,
  overwrite: false,
});

/** The headers and place of a request, as the guards read them. */
function factsOf(c: Context): RequestFacts {
  const h = (name: string) => c.req.header(name) ?? null;
  return { method: c.req.method, path: c.req.path, host: h("host"), origin: h("origin"), secFetchSite: h("sec-fetch-site"), secFetchMode: h("sec-fetch-mode") };
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
  app.onError((error) => {
    if (error instanceof HTTPException) return error.getResponse();
    deps.onError?.(error);
    return apiError(500, "api_error", "internal error");
  });
  const tapHeaders = async (c: Context, next: Next) => {
    await TAP_HEADERS(c, next);
    c.res.headers.set("cache-control", "no-store");
  };
  app.use("/_tap/*", tapHeaders);
  app.use("/_tap", tapHeaders);
  app.use("*", async (c, next) => {
    const refusal = crossSiteRefusal(factsOf(c), allowedHosts);
    if (refusal !== null) return apiError(403, "permission_error", refusal);
    await next();
  });
  const cookieOk = (c: Context) => token !== null && sameSecret(getCookie(c, ACCESS_COOKIE) ?? "", accessCookieValue(token));
  const bearerOf = (c: Context) => /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "")?.[1];
  // A client that guesses the token is slowed down and counted, never its guess (docs/RELIABILITY.md "Trust boundaries").
  const gate = deps.tokenGate ?? new TokenGate();
  const wrongToken = (c: Context) => {
    const peer = peerOf(c);
    deps.onTokenFailure?.({ peer, ...gate.failed(peer) });
  };
  /** Seconds the client must still wait before a token it offers is read (0: none). */
  const waitOf = (c: Context) => Math.ceil(gate.waitMs(peerOf(c)) / 1000);
  const slowedDown = (seconds: number) =>
    apiError(429, "rate_limit_error", `too many wrong tokens from this client; try again in ${seconds} s`, { "retry-after": String(seconds) });
  // A foreign Host is a page that rebound its own domain to the tap: it reads the status, never the paths
  // and session ids the rest of health carries (the Host check of the viewer, applied here too).
  const ownHost = (c: Context) => allowedHosts === null || allowedHosts.has(hostName(c.req.header("host")));
  app.get("/_tap/health", async (c) => {
    const health = await deps.health();
    if (token === null) return c.json(ownHost(c) ? health : { status: health.status });
    const bearer = bearerOf(c);
    if (cookieOk(c)) return c.json(health);
    // While its client waits, a token is not read at all: neither right nor a failure.
    if (bearer === undefined || waitOf(c) > 0) return c.json({ status: health.status });
    if (!sameSecret(bearer, token)) {
      wrongToken(c);
      return c.json({ status: health.status });
    }
    gate.succeeded(peerOf(c));
    return c.json(health);
  });
  app.get("/_tap/login", (c) => {
    const given = c.req.query("token") ?? "";
    const wait = given === "" ? 0 : waitOf(c);
    if (wait > 0) return slowedDown(wait);
    if (token === null || !sameSecret(given, token)) {
      if (token !== null && given !== "") wrongToken(c);
      return c.html(loginPage("That is not this tap's token."), 401);
    }
    gate.succeeded(peerOf(c));
    setCookie(c, ACCESS_COOKIE, accessCookieValue(token), { httpOnly: true, sameSite: "Strict", path: "/_tap" });
    return c.redirect("/_tap/", 303);
  });
  // Any of the three ways a request fails the token (none, malformed, wrong) gets the same answer.
  const refuse = (c: Context) => {
    const why = "this tap's own routes need its token: send Authorization: Bearer <token>, or open the login link its startup printed";
    if (c.req.method === "GET" && c.req.path === "/_tap/") return c.html(loginPage(why), 401);
    return apiError(401, "authentication_error", why);
  };
  const challenge = 'Bearer realm="sessiontap"';
  const bearer = token === null ? null : bearerAuth({
    token,
    noAuthenticationHeader: { message: refuse, wwwAuthenticateHeader: challenge },
    invalidAuthenticationHeader: { message: (c: Context) => (wrongToken(c), refuse(c)), wwwAuthenticateHeader: challenge },
    invalidToken: { message: (c: Context) => (wrongToken(c), refuse(c)), wwwAuthenticateHeader: challenge },
  });
  const tokenGuard = async (c: Context, next: Next) => {
    if (locked) return apiError(403, "permission_error", "this tap listens beyond loopback without a token; its own routes are closed");
    if (bearer === null) return await next();
    const wait = waitOf(c);
    if (wait > 0 && (bearerOf(c) !== undefined || getCookie(c, ACCESS_COOKIE) !== undefined)) return slowedDown(wait);
    if (cookieOk(c)) {
      gate.succeeded(peerOf(c));
      return await next();
    }
    if (getCookie(c, ACCESS_COOKIE) !== undefined && bearerOf(c) === undefined) wrongToken(c); // a stale or forged login cookie
    return await bearer(c, async () => {
      gate.succeeded(peerOf(c));
      await next();
    });
  };
  app.use("/_tap/*", tokenGuard);
  app.use("/_tap", tokenGuard);
  if (viewer !== undefined) app.route("/_tap/", viewerRoutes(viewer));
  app.all("/_tap/*", () => apiError(404, "not_found_error", "no such tap route"));
  app.all("/_tap", (c) => c.redirect("/_tap/", 302));
  app.all("*", (c) => deps.forward(c.req.raw));
  return app;
}

/** A page asking for the token (its form opens the login link). */
function loginPage(why: string): string {
  const text = why.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>sessiontap</title></head>
<body style="font:15px system-ui,sans-serif;max-width:40em;margin:3em auto"><h1>sessiontap</h1><p>${text}</p>
<form method="get" action="/_tap/login"><label>Token <input name="token" type="password" autocomplete="off" autofocus></label> <button>Open the viewer</button></form></body></html>
`;
}
