/**
 * Forwards one request to the upstream and streams the answer back (docs/DESIGN.md "Passthrough"), feeding the mirror from
 * the tee. Web-standard Request/Response only; `fetch` is injected.
 */
import { clientResponseHeaders, upstreamRequestHeaders } from "../protocol/headers.ts";
import { describe } from "../storage/events-log.ts";
import type { Mirror } from "./mirror.ts";
import { teeBody } from "./tee.ts";

/** What forwarding needs from the outside. */
export interface ForwardDeps {
  /** Upstream origin (and optional base path), no trailing slash. */
  upstream: string;
  fetch: typeof fetch;
  mirror: Mirror | null;
  holdBackMs: number;
  /** Hears whether the upstream was reached (health and stderr lines); never sees credentials. */
  upstreamHealth: { failed(error: unknown, how: "unreachable" | "broke"): void; answered(): void };
}

/** Statuses whose responses carry no body (RFC 9110 §6.4.1). */
const NULL_BODY = new Set([101, 204, 205, 304]);

/** The Anthropic-shaped error answered when the upstream cannot be reached (docs/DESIGN.md "Passthrough"). */
export function upstreamUnreachable(message: string): Response {
  const body = { type: "error", error: { type: "api_error", message: `sessiontap: ${message}` } };
  return new Response(JSON.stringify(body), { status: 502, headers: { "content-type": "application/json" } });
}

/** Forwards `request` to the upstream: same method, path, query, headers (less hop-by-hop) and body bytes. */
export async function forward(request: Request, deps: ForwardDeps): Promise<Response> {
  const url = new URL(request.url);
  // Only path and query are taken from the client: an absolute-form target or a Host header cannot
  // send the tap anywhere but the configured upstream.
  const target = deps.upstream + url.pathname + url.search;
  const hasBody = request.method !== "GET" && request.method !== "HEAD";
  // Buffered, not streamed: avoids runtime streamed-body regressions and keeps content-length exact.
  const body = hasBody ? new Uint8Array(await request.arrayBuffer()) : null;
  const observer = deps.mirror?.begin({ method: request.method, pathname: url.pathname, headers: request.headers, body }) ?? null;

  const pending = deps.fetch(target, {
    method: request.method,
    headers: upstreamRequestHeaders(request.headers),
    body,
    redirect: "manual",
    signal: request.signal,
  });
  // The mirror reads the request while the upstream works on it (docs/DESIGN.md "Passthrough"): in the next task, so the
  // runtime sends the request first (Deno's fetch does so only once JavaScript yields). If the answer
  // comes back first, `response()` prepares on the spot.
  const prepare = () => {
    try {
      observer?.prepare();
    } catch (error) {
      deps.mirror!.fail("prepare", error);
    }
  };
  if (observer !== null) setTimeout(prepare, 0);

  let upstream: Response;
  try {
    upstream = await pending;
  } catch (error) {
    if (request.signal.aborted) return new Response(null, { status: 499 });
    deps.upstreamHealth.failed(error, "unreachable");
    return upstreamUnreachable(`upstream ${new URL(deps.upstream).host} could not be reached (${describe(error)})`);
  }
  deps.upstreamHealth.answered();

  if (observer !== null) {
    prepare();
    try {
      observer.response(upstream.status, upstream.headers);
    } catch (error) {
      deps.mirror!.fail("response", error);
    }
  }
  const headers = clientResponseHeaders(upstream.headers);
  const init = { status: upstream.status, statusText: upstream.statusText, headers };
  if (upstream.body === null || NULL_BODY.has(upstream.status) || request.method === "HEAD") {
    if (upstream.body !== null) void upstream.body.cancel();
    return new Response(null, init);
  }
  // Nothing to mirror: the upstream's body goes to the client as it is, with no JavaScript in its path.
  if (observer === null) return new Response(upstream.body, init);
  const tee = teeBody(upstream.body, observer, {
    holdBackMs: deps.holdBackMs,
    onObserverError: (error) => deps.mirror!.fail("stream", error),
    clientGone: () => request.signal.aborted,
    upstreamBroke: (error) => deps.upstreamHealth.failed(error, "broke"),
    cutQuietly: true,
    onLate: () => deps.mirror!.late(),
  });
  return new Response(tee, init);
}
