/**
 * Forwards one request to the upstream and streams the answer back (docs/DESIGN.md "Passthrough"); for a
 * Messages API call the relay's observer copies the request and the answer to the mirror engine on the
 * way (docs/DESIGN.md "Off the relay path"). Web-standard Request/Response only; `fetch` is injected.
 */
import { clientResponseHeaders, fetchDecoded, type FetchRuntime, upstreamRequestHeaders } from "../protocol/headers.ts";
import { describe } from "../storage/events-log.ts";
import type { EngineLink } from "./engine-link.ts";
import type { RelayObserver } from "./relay-observer.ts";
import { relayBody } from "./request-body.ts";
import { teeBody } from "./tee.ts";

/** What forwarding needs from the outside. */
export interface ForwardDeps {
  /** Upstream origin (and optional base path), no trailing slash. */
  upstream: string;
  fetch: typeof fetch;
  /** Whose fetch `fetch` is: what it decodes differs (fetchDecoded). */
  runtime: FetchRuntime;
  /** The mirror engine, or null when the mirror is off. */
  engine: EngineLink | null;
  /** Largest request body the mirror keeps a copy of. */
  maxMessageBytes: number;
  /** Largest sized request body read whole before it goes upstream (see relayBody). */
  readFirstBytes: number;
  clock: () => number;
  /** Aborted when the tap stops and its drain bound ran out: every upstream fetch ends then. */
  stopping: AbortSignal;
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
  // Only Messages API calls are mirrored (docs/DESIGN.md "The mirror"); everything else is relayed natively.
  const observer = deps.engine !== null && request.method === "POST" && url.pathname === "/v1/messages"
    ? deps.engine.openFor(request.headers, deps.clock())
    : null;
  const signal = AbortSignal.any([request.signal, deps.stopping]);
  const relayed = await relayBody(request, observer === null ? -1 : deps.maxMessageBytes, deps.readFirstBytes);
  const sent = upstreamRequestHeaders(request.headers, relayed.body instanceof ReadableStream);
  const pending = deps.fetch(target, {
    method: request.method,
    headers: sent,
    body: relayed.body,
    redirect: "manual",
    signal,
    duplex: "half",
  } as RequestInit);
  // The mirror gets the request's bytes once they went upstream: the engine reads them while the upstream works.
  if (observer !== null) void relayed.copy().then((copy) => observer.body(copy));

  let upstream: Response;
  try {
    upstream = await pending;
  } catch (error) {
    observer?.cut("upstream");
    if (signal.aborted) return new Response(null, { status: 499 });
    deps.upstreamHealth.failed(error, "unreachable");
    return upstreamUnreachable(`upstream ${new URL(deps.upstream).host} could not be reached (${describe(error)})`);
  }
  deps.upstreamHealth.answered();
  const decoded = fetchDecoded(deps.runtime, upstream.headers.get("content-encoding"), sent.get("accept-encoding"));
  const headers = clientResponseHeaders(upstream.headers, decoded);
  return answer(request, signal, upstream, headers, observer !== null && observer.head(upstream.status, headers) ? observer : null, deps);
}

/** The client's response: the upstream's status, `headers` and body, teed to the observer when there is one. */
function answer(request: Request, signal: AbortSignal, upstream: Response, headers: Headers, observer: RelayObserver | null, deps: ForwardDeps): Response {
  const init = { status: upstream.status, statusText: upstream.statusText, headers };
  if (upstream.body === null || NULL_BODY.has(upstream.status) || request.method === "HEAD") {
    if (upstream.body !== null) void upstream.body.cancel();
    observer?.end();
    return new Response(null, init);
  }
  // Nothing to mirror: the upstream's body goes to the client as it is, with no JavaScript in its path.
  if (observer === null) return new Response(upstream.body, init);
  const tee = teeBody(upstream.body, observer, {
    clientGone: () => signal.aborted,
    upstreamBroke: (error) => deps.upstreamHealth.failed(error, "broke"),
    cutQuietly: true,
  });
  return new Response(tee, init);
}
