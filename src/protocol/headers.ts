/**
 * Header rules for a transparent forwarder. Pure: Headers in, Headers out.
 * Hop-by-hop headers follow RFC 9110 §7.6.1; encodings follow docs/RUNTIMES.md "Encoding and headers".
 */
import { signedHeaderNames } from "./providers/aws-signature.ts";

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

/** Content codings both runtimes' fetch decode transparently (Bun's zstd too); anything else would reach us still encoded. */
export const DECODED_ENCODINGS = ["gzip", "deflate", "br"];

/** Removes hop-by-hop headers and every header the `connection` header names, but one a signature covers. */
function dropHopByHop(headers: Headers, signed: ReadonlySet<string> = new Set()): void {
  const named = (headers.get("connection") ?? "").split(",").map((s) => s.trim().toLowerCase()).filter((name) => name !== "" && !signed.has(name));
  for (const name of [...HOP_BY_HOP, ...named]) headers.delete(name);
}

/**
 * The headers to send upstream: the client's, less hop-by-hop ones, less `host` (fetch sets it from the
 * upstream URL). `content-length` stays only for a `streamed` body, which fetch cannot measure (a body given
 * as bytes gets its length from fetch, the same). `accept-encoding` is narrowed to codings the runtime decodes
 * (and set to them when absent), so a decoded body never keeps a header that lies about it. A header an AWS
 * signature covers goes as it is, or AWS would refuse the request (docs/DESIGN.md "Bedrock's signatures"):
 * the connection's own (HOP_BY_HOP) are no signer's to sign and fetch's to set, but a signed
 * `accept-encoding` is not narrowed, nor is a signed header dropped for being named by `connection`.
 */
export function upstreamRequestHeaders(incoming: Headers, streamed = false): Headers {
  const chunked = incoming.has("transfer-encoding");
  const signed = signedHeaderNames(incoming);
  const out = new Headers(incoming);
  dropHopByHop(out, signed);
  out.delete("host");
  if (!streamed || chunked || !/^\d+$/.test(out.get("content-length") ?? "")) out.delete("content-length");
  const accept = out.get("accept-encoding");
  // Without one, the runtime's fetch adds its own (Bun's includes zstd, which Deno's does not decode), so
  // always send an explicit list: the upstream then answers alike on every runtime.
  if (accept === null) out.set("accept-encoding", DECODED_ENCODINGS.join(", "));
  else if (!signed.has("accept-encoding")) {
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
 * the body (it decodes the codings `decoded` names), `content-encoding` and `content-length` describe bytes
 * the client will never see, so both go; a body in a coding it does not decode keeps them, truthfully.
 */
export function clientResponseHeaders(upstream: Headers, decoded: readonly string[] = DECODED_ENCODINGS): Headers {
  const out = new Headers(upstream);
  dropHopByHop(out);
  const encoding = (out.get("content-encoding") ?? "").trim().toLowerCase();
  if (encoding !== "" && encoding.split(",").every((c) => decoded.includes(c.trim()))) {
    out.delete("content-encoding");
    out.delete("content-length");
  }
  return out;
}
