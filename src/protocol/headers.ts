/**
 * Header rules for a transparent forwarder. Pure: Headers in, Headers out.
 * Hop-by-hop headers follow RFC 9110 §7.6.1; encodings follow docs/RUNTIMES.md "Encoding and headers".
 */

/** Connection-specific headers a proxy must not forward (RFC 9110 §7.6.1), plus proxy-only ones. */
export const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Content codings both runtimes' fetch decode transparently; anything else would reach us still encoded. */
export const DECODED_ENCODINGS = ["gzip", "deflate", "br"];

/** Removes hop-by-hop headers and every header the `connection` header names. */
function dropHopByHop(headers: Headers): void {
  const named = (headers.get("connection") ?? "").split(",").map((s) => s.trim().toLowerCase()).filter(Boolean);
  for (const name of [...HOP_BY_HOP, ...named]) headers.delete(name);
}

/**
 * The headers to send upstream: the client's, less hop-by-hop ones, less `host` (fetch sets it from the
 * upstream URL). `content-length` stays only for a `streamed` body, which fetch cannot measure (a body given
 * as bytes gets its length from fetch). `accept-encoding` is narrowed to codings the runtime decodes (and
 * set to them when absent), so a decoded body never keeps a header that lies about it.
 */
export function upstreamRequestHeaders(incoming: Headers, streamed = false): Headers {
  const chunked = incoming.has("transfer-encoding");
  const out = new Headers(incoming);
  dropHopByHop(out);
  out.delete("host");
  if (!streamed || chunked || !/^\d+$/.test(out.get("content-length") ?? "")) out.delete("content-length");
  const accept = out.get("accept-encoding");
  // Without one, the runtime's fetch adds its own (Bun's includes zstd, which it decodes but
  // clientResponseHeaders cannot know was decoded), so always send an explicit list.
  if (accept === null) out.set("accept-encoding", DECODED_ENCODINGS.join(", "));
  else {
    const kept = accept.split(",").map((s) => s.trim()).filter((part) => {
      const coding = part.split(";")[0].trim().toLowerCase();
      return DECODED_ENCODINGS.includes(coding) || coding === "identity";
    });
    out.set("accept-encoding", kept.length > 0 ? kept.join(", ") : "identity");
  }
  return out;
}

/**
 * The headers to send the client: the upstream's, less hop-by-hop ones. When the runtime's fetch decoded
 * the body, `content-encoding` and `content-length` describe bytes the client will never see, so both go.
 */
export function clientResponseHeaders(upstream: Headers): Headers {
  const out = new Headers(upstream);
  dropHopByHop(out);
  const encoding = (out.get("content-encoding") ?? "").trim().toLowerCase();
  if (encoding !== "" && encoding.split(",").every((c) => DECODED_ENCODINGS.includes(c.trim()))) {
    out.delete("content-encoding");
    out.delete("content-length");
  }
  return out;
}
