// The viewer: a Hono sub-app mounted at `/_tap/`, its data read in a Worker of its own (a test's filesystem: in this thread): docs/DESIGN.md "The viewer".
import { type Context, Hono, type Next } from "hono";
import { NONCE, secureHeaders, type SecureHeadersVariables } from "hono/secure-headers";
import { streamSSE } from "hono/streaming";
import { nameInside } from "../protocol/session-id.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { BUILTIN_PRICES } from "../usage/prices.ts";
import { type Calls, WorkerCalls } from "../utils/worker-call.ts";
import { orAfter } from "../utils/alarm.ts";
import type { GuardAlert, ListEntry, LiveEvent, ReaderNote, ReaderSettings, RestoreReply, SessionView, ViewerSession } from "./api.ts";
import { ViewerData } from "./api.ts";
import { allowedHosts, hostName } from "./hosts.ts";
import { type Bundler, clientScript, viewerPage } from "./page.ts";

/** `allowedHosts` null: any host (the tap was bound beyond loopback on purpose). */
export type ViewerDeps = { allowedHosts: ReadonlySet<string> | null; routes: Hono<{ Variables: SecureHeadersVariables }> };

export type Viewer = ReturnType<typeof createViewer>;

const KEEPALIVE_MS = 15_000;
const RESTORED_LOOK_MS = 1_000;

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

export function createViewer(
  options: Pick<ReaderSettings, "mirrorDir" | "claudeDir"> & Partial<ReaderSettings> & {
    host: string;
    version: string;
    onError: (error: unknown) => void;
    bundle: Bundler;
    /** A filesystem of the caller's own: the data is then read in this thread (with `clock`). */
    fs?: FsAdapter;
    clock?: () => number;
    /** Default: src/viewer-worker.ts; the binary passes its own. */
    workerUrl?: URL | string;
    guardAlert?: (sessionId: string) => GuardAlert | null;
    /** After a restore wrote a session's transcript (the guard looks at it at once). */
    restored?: (sessionId: string) => Promise<void>;
  },
): { deps: ViewerDeps; close(): void } {
  const { mirrorDir, claudeDir, pollMs = 1000, prices = BUILTIN_PRICES, redact = true } = options;
  const settings: ReaderSettings = { mirrorDir, claudeDir, pollMs, prices, redact };
  const live = new Map<number, { dir: string; records(event: LiveEvent): void; end(): void }>();
  const tell = (note: ReaderNote) => {
    if ("error" in note) options.onError(new Error(note.error));
    else for (const l of live.values()) if (l.dir === note.records.dir) l.records(note.records);
  };
  let closed = false;
  let worker: WorkerCalls<ViewerData> | null = null;
  const workerUrl = options.workerUrl ?? new URL("../viewer-worker.ts", import.meta.url);
  const on = {
    name: "the viewer's reader",
    died(why: string) {
      options.onError(new Error(`the viewer's reader stopped: ${why}`));
      for (const l of live.values()) l.end(); // the page follows again, and sees what it missed
    },
    message: (note: unknown) => tell(note as ReaderNote),
  };
  const inThread = options.fs !== undefined ? new ViewerData(options.fs, settings, tell, options.clock) : null;
  const data: Calls<ViewerData> = inThread ?? new Proxy({} as Calls<ViewerData>, {
    get: (_, name: string) => (...args: unknown[]) => {
      if (closed) return Promise.reject(new Error("the viewer is closed"));
      if (worker?.stopped !== null) worker = new WorkerCalls(workerUrl, settings, on);
      return (worker.call as (name: string, ...args: unknown[]) => Promise<unknown>).apply(worker, [name, ...args]);
    },
  });
  // Open event streams end when the tap stops, so they do not hold the drain.
  const stopping = new AbortController();
  let nextFollow = 1;
  const hosts = allowedHosts(options.host);
  const app = new Hono<{ Variables: SecureHeadersVariables }>();
  // While the tap listens on loopback, a page that rebinds its own domain to 127.0.0.1 must not read the conversations.
  const loopbackOnly = async (c: Context, next: Next) => {
    if (hosts !== null && !hosts.has(hostName(c.req.header("host")))) {
      return c.json({ error: "sessiontap: the viewer answers on a loopback address only (http://127.0.0.1:PORT/_tap/)" }, 403);
    }
    await next();
  };
  app.use("/", loopbackOnly);
  app.use("/api/*", loopbackOnly);
  app.get("/", PAGE_POLICY, async (c) => c.html(viewerPage(c.get("secureHeadersNonce") ?? "", options.version, await clientScript(options.bundle))));
  const withAlert = (s: ListEntry): ViewerSession => ({ ...s, guard: s.sessionId === null ? null : options.guardAlert?.(s.sessionId) ?? null });
  app.get("/api/sessions", async (c) => c.json((await data.sessions()).map(withAlert)));
  app.get("/api/sessions/:id", async (c) => {
    const answer = await data.session(c.req.param("id"));
    if (answer.status !== 200) return c.json(answer.body, answer.status);
    const view = answer.body as SessionView;
    return c.json({ ...view, session: withAlert(view.session) } satisfies SessionView);
  });
  app.get("/api/sessions/:id/export", async (c) => {
    const out = await data.exportSession(c.req.param("id"), c.req.query("format") ?? "md");
    const headers: Record<string, string> = { "content-type": out.type };
    if (out.status === 200) headers["content-disposition"] = `attachment; filename="${out.filename.replace(/[^A-Za-z0-9._-]/g, "_")}"`;
    return c.body(out.body, out.status, headers);
  });
  app.get("/api/search", async (c) => c.json(await data.search(c.req.query("q") ?? "")));
  app.get("/api/usage", async (c) => c.json(await data.usage()));
  app.post("/api/sessions/:id/restore", async (c) => {
    // A request another site made was refused before any route (server/request-guard.ts); a form cannot send JSON.
    if (!/^application\/json\b/i.test(c.req.header("content-type") ?? "")) return c.json({ error: "sessiontap: restore takes a JSON body" }, 415);
    const asked = await c.req.json().catch(() => undefined) as { dryRun?: unknown; force?: unknown } | null | undefined;
    if (asked === undefined) return c.json({ error: "sessiontap: the body is not JSON" }, 400);
    if (typeof asked?.dryRun !== "boolean" || (asked.force !== undefined && typeof asked.force !== "boolean")) {
      return c.json({ error: 'sessiontap: restore takes {"dryRun": true|false, "force": true|false}' }, 400);
    }
    const answer = await data.restore(c.req.param("id"), { dryRun: asked.dryRun, force: asked.force === true });
    const done = answer.body as RestoreReply;
    // The page the client reloads next shows the state after the restore: the guard has looked (bounded).
    if (!asked.dryRun && done.ok && options.restored) await orAfter(options.restored(done.outcome.sessionId), RESTORED_LOOK_MS, null);
    return c.json(answer.body, answer.status);
  });
  app.get("/api/events", (c) => {
    const dir = c.req.query("dir") ?? "";
    if (nameInside(dir) === null || dir.startsWith(".")) return c.json({ error: "sessiontap: events takes ?dir=<a session's directory>" }, 400);
    return streamSSE(c, async (stream) => {
      let end = () => {};
      const ended = new Promise<void>((resolve) => (end = resolve));
      stream.onAbort(end);
      stopping.signal.addEventListener("abort", end);
      if (stopping.signal.aborted) end();
      const id = nextFollow++;
      live.set(id, { dir, end, records: (event) => void stream.writeSSE({ event: "records", data: JSON.stringify(event) }) });
      const bytes = await data.follow(id, dir).catch((error) => {
        live.delete(id);
        throw error;
      });
      const keepalive = setInterval(() => void stream.write(": keepalive\n\n"), KEEPALIVE_MS);
      (keepalive as { unref?: () => void }).unref?.();
      await stream.writeSSE({ event: "ready", data: JSON.stringify({ bytes }), retry: 2000 });
      await ended;
      clearInterval(keepalive);
      stopping.signal.removeEventListener("abort", end);
      if (live.delete(id) && !closed) data.unfollow(id).catch(options.onError);
    });
  });
  return {
    close: () => {
      closed = true;
      stopping.abort();
      void inThread?.unfollow(null);
      worker?.close("the tap is stopping");
    },
    deps: { allowedHosts: hosts, routes: app },
  };
}
