/**
 * Forwards one request to the upstream and streams the answer back (docs/DESIGN.md "Passthrough"); for a
 * conversation's turn, on any provider the tap knows (docs/DESIGN.md "Providers"), the relay's observer
 * copies the request and the answer to the mirror engine on the way (docs/DESIGN.md "Off the relay path").
 * Web-standard Request/Response only; `fetch` is injected.
 */
import { awsRefusal, type Refusal } from "../protocol/providers/aws-signature.ts";
import { pathShape } from "../protocol/providers/path-shape.ts";
import { recognise } from "../protocol/providers/recognise.ts";
import { apiError } from "../protocol/api-error.ts";
import { clientResponseHeaders, fetchDecoded, type FetchRuntime, upstreamRequestHeaders } from "../protocol/headers.ts";
import { describe } from "../utils/describe-error.ts";
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
  /** Hears a request the tap answered itself rather than forward it (docs/DESIGN.md "Bedrock's signatures"). */
  refused?: (refusal: Refusal, shape: string) => void;
  /**
   * True when the client addressed the upstream's own host (proxy mode): a SigV4 signature is valid there, so
   * nothing is refused, and the headers it signs reach the upstream as they are (docs/DESIGN.md "Bedrock's signatures").
   * Its tunnel's CONNECT carried the tap's token when the tap has one, so its API traffic needs no token header.
   */
  proxied?: boolean;
}

/** Statuses whose responses carry no body (RFC 9110 §6.4.1). */
const NULL_BODY = new Set([101, 204, 205, 304]);

/** The Anthropic-shaped error answered when the upstream cannot be reached (docs/DESIGN.md "Passthrough"). */
export function upstreamUnreachable(message: string): Response {
  return apiError(502, "api_error", message);
}

/**
 * A refusal in AWS's own error shape (docs/DESIGN.md "Bedrock's signatures"): the request was meant for AWS,
 * and both AWS's SDK and the Anthropic SDK's Bedrock client show a top-level `message` as it is. A 400, not
 * a 403: Claude Code takes a 403 from Bedrock for credentials it may refresh and retries it for minutes
 * before it says anything, where a 400 is shown at once; and no retry can help.
 */
function awsRefused(message: string): Response {
  const body = { __type: "ValidationException", message: `sessiontap: ${message}` };
  return new Response(JSON.stringify(body), {
    status: 400,
    headers: { "content-type": "application/json", "x-amzn-errortype": "ValidationException", "x-should-retry": "false" },
  });
}

/** True when the request says its body is JSON (the only bodies that can be a conversation). */
function isJson(headers: Headers): boolean {
  return /^application\/(?:[\w.+-]*\+)?json\b/i.test(headers.get("content-type")?.trimStart() ?? "");
}

/** Forwards `request` to the upstream: same method, path, query, headers (less hop-by-hop) and body bytes. */
export async function forward(request: Request, deps: ForwardDeps): Promise<Response> {
  const url = new URL(request.url);
  // Only path and query are taken from the client: an absolute-form target or a Host header cannot
  // send the tap anywhere but the configured upstream.
  const target = deps.upstream + url.pathname + url.search;
  const refusal = deps.proxied === true ? null : awsRefusal(request.headers, deps.upstream);
  if (refusal !== null) {
    deps.refused?.(refusal, pathShape(url.pathname));
    return awsRefused(refusal.message);
  }
  // Only a conversation's turns are mirrored (docs/DESIGN.md "Providers"); everything else is relayed natively,
  // but a POST whose JSON body may be a conversation goes to the engine to be told apart (docs/DESIGN.md
  // "Nothing forwarded unseen").
  const seen = recognise(request.method, url.pathname);
  const observer = deps.engine !== null && seen.kind === "conversation"
    ? deps.engine.openFor(request.headers, deps.clock(), { provider: seen.provider, model: seen.model }, deps.proxied === true)
    : null;
  const unseen = deps.engine !== null && seen.kind === "other" && request.method === "POST" && isJson(request.headers) ? seen.reason : null;
  const signal = AbortSignal.any([request.signal, deps.stopping]);
  const relayed = await relayBody(request, observer === null && unseen === null ? -1 : deps.maxMessageBytes, deps.readFirstBytes);
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
  else if (unseen !== null) void relayed.copy().then((copy) => deps.engine!.unseen(pathShape(url.pathname), unseen, copy));

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
