// Forwards one request upstream and streams the answer back (docs/DESIGN.md "Passthrough"), a conversation's turn copied to the
// engine on the way.
import { apiError, awsRefusal, awsRefused, clientResponseHeaders, fetchDecoded, upstreamRequestHeaders } from "../protocol/headers.ts";
import type { FetchRuntime, Refusal } from "../protocol/headers.ts";
import { pathShape, recognise } from "../protocol/providers/recognise.ts";
import { describe } from "../utils/describe-error.ts";
import type { BodyCopy, CutBy } from "../mirror/messages.ts";
import type { EngineLink } from "./engine-link.ts";
import { teeBody } from "./tee.ts";

export interface ForwardDeps {
  upstream: string;
  fetch: typeof fetch;
  runtime: FetchRuntime;
  engine: EngineLink | null;
  maxMessageBytes: number;
  readFirstBytes: number;
  clock: () => number;
  stopping: AbortSignal;
  upstreamHealth: { failed(error: unknown, how: "unreachable" | "broke"): void; answered(): void };
  refused?: (refusal: Refusal, shape: string) => void;
  /** Proxy mode: the client addressed the upstream's own host (its SigV4 signature holds) and its CONNECT carried any token. */
  proxied?: boolean;
}

const NULL_BODY = new Set([101, 204, 205, 304]); // RFC 9110 §6.4.1

export async function forward(request: Request, deps: ForwardDeps): Promise<Response> {
  const url = new URL(request.url);
  // Only path and query are the client's: no absolute-form target or Host header sends the tap anywhere else.
  const target = deps.upstream + url.pathname + url.search;
  const refusal = deps.proxied === true ? null : awsRefusal(request.headers, deps.upstream);
  if (refusal !== null) {
    deps.refused?.(refusal, pathShape(url.pathname));
    return awsRefused(refusal.message);
  }
  // A POST whose JSON body may be a conversation goes to the engine to be told apart (docs/DESIGN.md "Nothing forwarded unseen").
  const seen = recognise(request.method, url.pathname);
  const observer = deps.engine !== null && seen.kind === "conversation"
    ? deps.engine.openFor(request.headers, deps.clock(), { provider: seen.provider, model: seen.model }, deps.proxied === true)
    : null;
  const unseen = deps.engine !== null && seen.kind === "other" && request.method === "POST" &&
      /^application\/(?:[\w.+-]*\+)?json\b/i.test(request.headers.get("content-type")?.trimStart() ?? "")
    ? seen.reason
    : null;
  const signal = AbortSignal.any([request.signal, deps.stopping]);
  const relayed = await relayBody(request, observer === null && unseen === null ? -1 : deps.maxMessageBytes, deps.readFirstBytes);
  const sent = upstreamRequestHeaders(request.headers, relayed.body instanceof ReadableStream);
  const pending = deps.fetch(target, { method: request.method, headers: sent, body: relayed.body, redirect: "manual", signal, duplex: "half" } as RequestInit);
  if (observer !== null) void relayed.copy.then((copy) => observer.body(copy));
  else if (unseen !== null) void relayed.copy.then((copy) => deps.engine!.unseen(pathShape(url.pathname), unseen, copy));

  let upstream: Response;
  try {
    upstream = await pending;
  } catch (error) {
    observer?.cut("upstream");
    if (signal.aborted) return new Response(null, { status: 499 });
    deps.upstreamHealth.failed(error, "unreachable");
    return apiError(502, "api_error", `upstream ${new URL(deps.upstream).host} could not be reached (${describe(error)})`);
  }
  deps.upstreamHealth.answered();
  const headers = clientResponseHeaders(upstream.headers, fetchDecoded(deps.runtime, upstream.headers.get("content-encoding"), sent.get("accept-encoding")));
  const init = { status: upstream.status, statusText: upstream.statusText, headers };
  const teed = observer !== null && observer.head(upstream.status, headers) ? observer : null;
  if (upstream.body === null || NULL_BODY.has(upstream.status) || request.method === "HEAD") {
    if (upstream.body !== null) void upstream.body.cancel();
    teed?.end();
    return new Response(null, init);
  }
  // Nothing to mirror: the upstream's body goes to the client with no JavaScript in its path.
  if (teed === null) return new Response(upstream.body, init);
  const tee = teeBody(upstream.body, teed, {
    clientGone: () => signal.aborted,
    upstreamBroke: (error) => deps.upstreamHealth.failed(error, "broke"),
    cutQuietly: true,
  });
  return new Response(tee, init);
}

/** One stderr line per reason, a count and an events-log line per request; nothing of it but its path's shape. */
export function refusalNotice(stderr: (line: string) => void, link: EngineLink | null): (refusal: Refusal, shape: string) => void {
  const said = new Set<string>();
  return (refusal, shape) => {
    if (!said.has(refusal.reason)) stderr(`sessiontap: refused a request to ${shape}: ${refusal.message}`);
    said.add(refusal.reason);
    link?.unseen(shape, refusal.reason, { skipped: "refused" }, true);
  };
}

// The engine reads the request's bytes while the upstream works on them: `copy` settles once they went, and never rejects.
type RelayedBody = { body: BodyInit | null; copy: Promise<BodyCopy> };
const skipped = (body: BodyInit | null, why: string): RelayedBody => ({ body, copy: Promise.resolve({ skipped: why }) });

// A sized body up to `readFirstBytes` is read whole first, the cheapest way measured (docs/RUNTIMES.md "Request bodies"); a larger
// one streams through a copy, costing the relay a little per chunk rather than milliseconds at once.
async function relayBody(request: Request, maxBytes: number, readFirstBytes: number): Promise<RelayedBody> {
  const source = request.body;
  if (source === null) return skipped(null, "no request body");
  if (maxBytes < 0) return skipped(source, "not mirrored");
  const declared = Number(request.headers.get("content-length") ?? NaN);
  const sized = Number.isFinite(declared) && declared >= 0;
  if (sized && declared > maxBytes) return skipped(source, `request body larger than SESSIONTAP_MAX_MESSAGE_BYTES (${declared} bytes)`);
  if (sized && declared <= readFirstBytes) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    return { body: bytes, copy: Promise.resolve({ bytes }) };
  }
  return copyingStream(source, sized ? declared : null, maxBytes);
}

function copyingStream(source: ReadableStream<Uint8Array>, declared: number | null, maxBytes: number): RelayedBody {
  let buffer: Uint8Array | null = new Uint8Array(declared ?? 64 * 1024);
  let length = 0;
  let settle!: (copy: BodyCopy) => void;
  const copy = new Promise<BodyCopy>((resolve) => (settle = resolve));
  const keeper = {
    chunk(chunk: Uint8Array) {
      if (buffer === null) return;
      if (length + chunk.byteLength > maxBytes) {
        buffer = null;
        return settle({ skipped: `request body larger than SESSIONTAP_MAX_MESSAGE_BYTES (more than ${maxBytes} bytes)` });
      }
      if (length + chunk.byteLength > buffer.byteLength) {
        const grown = new Uint8Array(Math.min(maxBytes, Math.max(buffer.byteLength * 2, length + chunk.byteLength)));
        grown.set(buffer.subarray(0, length));
        buffer = grown;
      }
      buffer.set(chunk, length);
      length += chunk.byteLength;
    },
    end: () => buffer !== null && settle({ bytes: length === buffer.byteLength ? buffer : buffer.slice(0, length) }),
    cut: (by: CutBy) => settle({ skipped: by === "client" ? "the request body was not sent whole" : "the request body could not be read" }),
  };
  return { body: teeBody(source, keeper, { clientGone: () => false }), copy };
}
