/**
 * Header rules for a transparent forwarder. Pure: Headers in, Headers out.
 * Hop-by-hop headers follow RFC 9110 §7.6.1; encodings follow docs/RUNTIMES.md "Encoding and headers".
 */
import { signedHeaderNames } from "./providers/aws-signature.ts";
import { TOKEN_HEADER } from "./credential.ts";

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

/**
 * Content codings the tap offers the upstream: the ones both runtimes' fetch decode alike when asked for
 * them (Deno's leaves `deflate` encoded, and decodes nothing it did not ask for), so an answer in a coding
 * that was asked for always reaches the client decoded.
 */
export const DECODED_ENCODINGS = ["gzip", "br"];

/** Which runtime's fetch read the answer: they decode different codings (docs/RUNTIMES.md "Encoding and headers"). */
export type FetchRuntime = "bun" | "deno";

/** The codings of a `content-encoding` value, lower-cased, without empty entries. */
function codingsOf(value: string): string[] {
  return value.split(",").map((c) => c.trim().toLowerCase()).filter((c) => c !== "");
}

/**
 * True when `runtime`'s fetch handed over the body decoded, as measured on every coding (Bun 1.4.5, Deno
 * 2.9.6): Bun decodes one coding of gzip, x-gzip, deflate, br or zstd (`identity` entries aside), asked
 * for or not, and nothing stacked; Deno decodes gzip or br alone, and only when `accepted` (the
 * `accept-encoding` it sent) names it. `test/passthrough/codings.test.ts` holds each runtime to this.
 */
export function fetchDecoded(runtime: FetchRuntime, contentEncoding: string | null, accepted: string | null): boolean {
  const codings = codingsOf(contentEncoding ?? "");
  if (runtime === "bun") {
    const real = codings.filter((c) => c !== "identity");
    return real.length === 1 && ["gzip", "x-gzip", "deflate", "br", "zstd"].includes(real[0]);
  }
  const one = (contentEncoding ?? "").trim().toLowerCase();
  return (one === "gzip" || one === "br") && codingsOf(accepted ?? "").map((c) => c.split(";")[0].trim()).includes(one);
}

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
  out.delete(TOKEN_HEADER); // the tap's own token is for the tap, never the upstream
  if (!streamed || chunked || !/^\d+$/.test(out.get("content-length") ?? "")) out.delete("content-length");
  // Always an explicit list of plain codings: without one the runtime's fetch adds its own, and a list
  // without weights is what Deno's fetch goes by when it decides whether to decode (fetchDecoded). A list
  // the request's signature covers goes as it is (docs/DESIGN.md "Bedrock's signatures").
  if (!signed.has("accept-encoding")) out.set("accept-encoding", offeredCodings(out.get("accept-encoding")));
  return out;
}

/** The codings offered upstream for a client's `accept-encoding`: those it accepts of DECODED_ENCODINGS, else identity. */
function offeredCodings(accept: string | null): string {
  if (accept === null) return DECODED_ENCODINGS.join(", ");
  const accepted = accept.split(",").flatMap((part) => {
    const [coding, ...params] = part.split(";").map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith("q="));
    return q !== undefined && !(Number(q.slice(2)) > 0) ? [] : [coding];
  });
  const kept = DECODED_ENCODINGS.filter((c) => accepted.includes(c) || accepted.includes("*"));
  return kept.length > 0 ? kept.join(", ") : "identity";
}

/**
 * The headers to send the client: the upstream's, less hop-by-hop ones. When the runtime's fetch decoded
 * the body (`decoded`: fetchDecoded), `content-encoding` and `content-length` describe bytes the client
 * will never see, so both go; otherwise the client gets the upstream's bytes under the upstream's label.
 */
export function clientResponseHeaders(upstream: Headers, decoded: boolean): Headers {
  const out = new Headers(upstream);
  dropHopByHop(out);
  if (decoded) {
    out.delete("content-encoding");
    out.delete("content-length");
  }
  return out;
}
