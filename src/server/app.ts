// The Hono app (docs/DESIGN.md "Trust boundaries"): the tap's own routes under /_tap/, for their owner only; the rest is forwarded.
import { type Context, Hono, type Next } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { HTTPException } from "hono/http-exception";
import { secureHeaders } from "hono/secure-headers";
import { apiError } from "../protocol/headers.ts";
import { hostName } from "../viewer/hosts.ts";
import type { ViewerDeps } from "../viewer/routes.ts";
import { crossSiteRefusal, type TokenCheck, TokenGate } from "./request-guard.ts";

export type Peer = { address: string; port: number };

export interface AppDeps {
  forward: (request: Request) => Promise<Response>;
  health: () => Promise<Record<string, unknown>> | Record<string, unknown>;
  prove?: (challenge: string) => string | null;
  viewer?: ViewerDeps;
  onError?: (error: unknown) => void;
  gate?: TokenGate;
  owner?: (peer: Peer) => Promise<boolean | null>;
}

type Access = TokenCheck | "foreign" | "none";

const ACCESS_COOKIE = "sessiontap_access";
// A route with a policy of its own (the viewer's page) keeps it.
const TAP_HEADERS = secureHeaders({
  contentSecurityPolicy: { defaultSrc: ["'none'"], styleSrc: ["'unsafe-inline'"], formAction: ["'self'"], frameAncestors: ["'none'"] },
  strictTransportSecurity: false,
  overwrite: false,
});

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  const viewer = deps.viewer;
  const allowedHosts = viewer?.allowedHosts ?? null;
  const gate = deps.gate ?? new TokenGate(null);
  // Open to any host and without a token, the tap's own routes would hand every conversation to the network.
  const locked = gate.token === null && allowedHosts === null && viewer !== undefined;
  const closed = locked ? "this tap listens beyond loopback without a token; its own routes are closed" : "this tap answers its own user only";
  const peerOf = (c: Context) => (c.env as { peer?: Peer | null } | undefined)?.peer ?? null;
  const addressOf = (c: Context) => peerOf(c)?.address ?? "unknown";
  const ownerOf = async (c: Context) => {
    const peer = peerOf(c);
    return locked ? false : deps.owner === undefined || peer === null ? null : await deps.owner(peer);
  };
  // Not hono/bearer-auth: its verifyToken says yes or no, and a client that must wait is answered 429 unread.
  const access = async (c: Context): Promise<Access> => {
    const owner = await ownerOf(c);
    if (owner !== null) return owner ? "ok" : "foreign";
    if (gate.token === null) return "ok";
    const authorization = c.req.header("authorization");
    if (authorization !== undefined) return gate.check(addressOf(c), /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] ?? authorization);
    const cookie = getCookie(c, ACCESS_COOKIE);
    return cookie === undefined ? "none" : gate.check(addressOf(c), cookie, "cookie");
  };
  const refuse = (c: Context, why: Exclude<Access, "ok">) => {
    if (typeof why === "number") {
      return apiError(429, "rate_limit_error", `too many wrong tokens from this client; try again in ${why} s`, { "retry-after": String(why) });
    }
    if (why === "foreign") return apiError(403, "permission_error", closed);
    const text = "this tap's own routes need its token: send Authorization: Bearer <token>, or open the login link its startup printed";
    const challenge = { "www-authenticate": 'Bearer realm="sessiontap"' };
    return c.req.method === "GET" && c.req.path === "/_tap/" ? c.html(loginPage(text), 401, challenge) : apiError(401, "authentication_error", text, challenge);
  };
  // Hono's own handler prints the error with the request's path and query (and Bun adds pages of source).
  app.onError((error) => {
    if (error instanceof HTTPException) return error.getResponse();
    deps.onError?.(error);
    return apiError(500, "api_error", "internal error");
  });
  app.use("/_tap/*", async (c, next) => {
    await TAP_HEADERS(c, next);
    c.res.headers.set("cache-control", "no-store");
  });
  app.use("*", async (c, next) => {
    const [host, origin, secFetchSite, secFetchMode] = ["host", "origin", "sec-fetch-site", "sec-fetch-mode"].map((name) => c.req.header(name) ?? null);
    const refusal = crossSiteRefusal({ method: c.req.method, path: c.req.path, host, origin, secFetchSite, secFetchMode }, allowedHosts);
    return refusal === null ? await next() : apiError(403, "permission_error", refusal);
  });
  // Anyone gets the bare status; a foreign Host (a page that rebound its name to the tap) never more.
  app.get("/_tap/health", async (c) => {
    const health = await deps.health();
    const challenge = c.req.query("challenge");
    if (challenge !== undefined) return c.json({ status: health.status, proof: deps.prove?.(challenge) ?? null });
    const ownHost = allowedHosts === null || allowedHosts.has(hostName(c.req.header("host")));
    return c.json(ownHost && (await access(c)) === "ok" ? health : { status: health.status });
  });
  app.get("/_tap/login", async (c) => {
    if ((await ownerOf(c)) === false) return refuse(c, "foreign");
    const given = c.req.query("token") ?? "";
    const checked = given === "" ? "wrong" : gate.check(addressOf(c), given);
    if (typeof checked === "number") return refuse(c, checked);
    if (checked === "wrong" || gate.cookie === null) return c.html(loginPage("That is not this tap's token."), 401);
    setCookie(c, ACCESS_COOKIE, gate.cookie, { httpOnly: true, sameSite: "Strict", path: "/_tap" });
    return c.redirect("/_tap/", 303);
  });
  app.use("/_tap/*", async (c: Context, next: Next) => {
    const checked = await access(c);
    return checked === "ok" ? await next() : refuse(c, checked);
  });
  if (viewer !== undefined) app.route("/_tap/", viewer.routes);
  app.all("/_tap", (c) => c.redirect("/_tap/", 302));
  app.all("/_tap/*", () => apiError(404, "not_found_error", "no such tap route"));
  app.all("*", (c) => deps.forward(c.req.raw));
  return app;
}

function loginPage(why: string): string {
  const text = why.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>sessiontap</title></head>
<body style="font:15px system-ui,sans-serif;max-width:40em;margin:3em auto"><h1>sessiontap</h1><p>${text}</p>
<form method="get" action="/_tap/login"><label>Token <input name="token" type="password" autocomplete="off" autofocus></label> <button>Open the viewer</button></form></body></html>
`;
}
