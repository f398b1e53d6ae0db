/**
 * The viewer's routes: a Hono sub-app the server mounts at `/_tap/` (docs/DESIGN.md "The viewer"). The
 * page under a Content-Security-Policy that runs only its nonced script (Hono's secure-headers), the data
 * under `api/`, exports, a restore, and new records as server-sent events (Hono's streamSSE). Beside
 * server/app.ts, the only module that imports hono. While the tap listens on loopback, only requests
 * addressed to a loopback name reach it (a page that rebinds its domain to 127.0.0.1 cannot read it).
 */
import { type Context, Hono, type Next } from "hono";
import { NONCE, secureHeaders, type SecureHeadersVariables } from "hono/secure-headers";
import { streamSSE } from "hono/streaming";
import type { ViewerDeps } from "./deps.ts";
import { hostName } from "./hosts.ts";

/** How often an idle event stream sends a comment, so proxies and browsers keep it open. */
const KEEPALIVE_MS = 15_000;

/** The page's policy: nothing from elsewhere, and only the script carrying this response's nonce runs. */
const PAGE_POLICY = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: [NONCE],
    styleSrc: ["'unsafe-inline'"],
    connectSrc: ["'self'"],
    imgSrc: ["'self'", "data:"],
    baseUri: ["'none'"],
    formAction: ["'none'"],
    frameAncestors: ["'none'"],
  },
  strictTransportSecurity: false,
});

/** The viewer's routes over `viewer`, to mount with `app.route("/_tap/", …)`. */
export function viewerRoutes(viewer: ViewerDeps): Hono<{ Variables: SecureHeadersVariables }> {
  const app = new Hono<{ Variables: SecureHeadersVariables }>();
  const loopbackOnly = async (c: Context, next: Next) => {
    if (viewer.allowedHosts !== null && !viewer.allowedHosts.has(hostName(c.req.header("host")))) {
      return c.json({ error: "sessiontap: the viewer answers on a loopback address only (http://127.0.0.1:PORT/_tap/)" }, 403);
    }
    await next();
  };
  app.use("/", loopbackOnly);
  app.use("/api/*", loopbackOnly);
  app.get("/", PAGE_POLICY, async (c) => c.html(await viewer.page(c.get("secureHeadersNonce") ?? "")));
  app.get("/api/sessions", async (c) => c.json(await viewer.sessions()));
  app.get("/api/sessions/:id", async (c) => {
    const answer = await viewer.session(c.req.param("id"));
    return c.json(answer.body, answer.status);
  });
  app.get("/api/sessions/:id/export", async (c) => {
    const out = await viewer.exportSession(c.req.param("id"), c.req.query("format") ?? "md");
    const headers: Record<string, string> = { "content-type": out.type };
    if (out.status === 200) headers["content-disposition"] = `attachment; filename="${out.filename.replace(/[^A-Za-z0-9._-]/g, "_")}"`;
    return c.body(out.body, out.status, headers);
  });
  app.get("/api/search", async (c) => c.json(await viewer.search(c.req.query("q") ?? "")));
  app.post("/api/sessions/:id/restore", async (c) => {
    // A request another site made was refused before any route (server/request-guard.ts); a form cannot send JSON.
    if (!/^application\/json\b/i.test(c.req.header("content-type") ?? "")) return c.json({ error: "sessiontap: restore takes a JSON body" }, 415);
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return c.json({ error: "sessiontap: the body is not JSON" }, 400);
    }
    const options = body as { dryRun?: unknown; force?: unknown } | null;
    if (
      typeof options !== "object" || options === null || typeof options.dryRun !== "boolean" ||
      (options.force !== undefined && typeof options.force !== "boolean")
    ) {
      return c.json({ error: 'sessiontap: restore takes {"dryRun": true|false, "force": true|false}' }, 400);
    }
    const answer = await viewer.restore(c.req.param("id"), { dryRun: options.dryRun, force: options.force === true });
    return c.json(answer.body, answer.status);
  });
  app.get("/api/events", (c) =>
    streamSSE(c, async (stream) => {
      // Open until the page goes away or the tap stops.
      let end = () => {};
      const ended = new Promise<void>((resolve) => (end = resolve));
      stream.onAbort(end);
      viewer.stopped.addEventListener("abort", end);
      if (viewer.stopped.aborted) end();
      const unsubscribe = await viewer.subscribe((event) => void stream.writeSSE({ event: "records", data: JSON.stringify(event) }));
      const keepalive = setInterval(() => void stream.write(": keepalive\n\n"), KEEPALIVE_MS);
      (keepalive as { unref?: () => void }).unref?.();
      await stream.writeSSE({ event: "ready", data: "{}", retry: 2000 });
      await ended;
      clearInterval(keepalive);
      viewer.stopped.removeEventListener("abort", end);
      unsubscribe();
    }));
  return app;
}
