// What the tap passes between client and upstream, and what it answers itself (docs/DESIGN.md "Passthrough"). Pure.
import { TOKEN_HEADER } from "./session-id.ts";

const HOP_BY_HOP = "connection keep-alive proxy-authenticate proxy-authorization proxy-connection te trailer transfer-encoding upgrade".split(" ");
// What both runtimes' fetch decode alike when asked for it (Deno's leaves `deflate` encoded, and decodes nothing it did not ask for).
const DECODED_ENCODINGS = ["gzip", "br"];

export type FetchRuntime = "bun" | "deno";

function listOf(value: string | null): string[] {
  return (value ?? "").split(",").map((c) => c.trim().toLowerCase()).filter((c) => c !== "");
}

// As test/passthrough/codings.test.ts measures: Bun decodes one of gzip, x-gzip, deflate, br or zstd, asked or not; Deno gzip or br alone, if asked.
export function fetchDecoded(runtime: FetchRuntime, contentEncoding: string | null, accepted: string | null): boolean {
  if (runtime === "bun") {
    const real = listOf(contentEncoding).filter((c) => c !== "identity");
    return real.length === 1 && ["gzip", "x-gzip", "deflate", "br", "zstd"].includes(real[0]);
  }
  const one = (contentEncoding ?? "").trim().toLowerCase();
  return (one === "gzip" || one === "br") && listOf(accepted).map((c) => c.split(";")[0].trim()).includes(one);
}

function dropHopByHop(headers: Headers, signed: ReadonlySet<string> = new Set()): void {
  for (const name of [...HOP_BY_HOP, ...listOf(headers.get("connection")).filter((name) => !signed.has(name))]) headers.delete(name);
}

// `content-length` stays only for a `streamed` body; a header an AWS signature covers goes as it is (docs/DESIGN.md "Bedrock's signatures").
export function upstreamRequestHeaders(incoming: Headers, streamed = false): Headers {
  const chunked = incoming.has("transfer-encoding");
  const signed = signedHeaderNames(incoming);
  const out = new Headers(incoming);
  dropHopByHop(out, signed);
  out.delete("host");
  out.delete(TOKEN_HEADER);
  if (!streamed || chunked || !/^\d+$/.test(out.get("content-length") ?? "")) out.delete("content-length");
  // Always an explicit list of plain codings: without one fetch adds its own, and Deno's decodes by what the list names.
  if (!signed.has("accept-encoding")) out.set("accept-encoding", offeredCodings(out.get("accept-encoding")));
  return out;
}

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

// A body fetch `decoded` loses the coding and the length, which describe other bytes.
export function clientResponseHeaders(upstream: Headers, decoded: boolean): Headers {
  const out = new Headers(upstream);
  dropHopByHop(out);
  if (decoded) {
    out.delete("content-encoding");
    out.delete("content-length");
  }
  return out;
}

function jsonAnswer(status: number, body: unknown, headers: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

export function apiError(status: number, type: string, message: string, headers: Record<string, string> = {}): Response {
  return jsonAnswer(status, { type: "error", error: { type, message: `sessiontap: ${message}` } }, headers);
}

export type Refusal = { reason: "signed for the tap's address" | "no credentials for AWS"; message: string };

const WHAT_WORKS = "run the tap in proxy mode (HTTPS_PROXY), where Claude Code's own signature stays valid, or use a Bedrock API key " +
  '(AWS_BEARER_TOKEN_BEDROCK); see docs/providers.md, "AWS Bedrock"';
const SIGNED = "this request is signed with AWS SigV4 for the tap's own address, and a signature covers the Host, so AWS would refuse it; " +
  `the tap does not re-sign requests: ${WHAT_WORKS}`;
const SIGV4 = /^\s*AWS4-HMAC-SHA256\b/i;

export function isAwsHost(host: string): boolean {
  return /(?:^|\.)amazonaws\.com(?:\.cn)?$/i.test(host.replace(/:\d+$/, ""));
}

export function awsRefusal(headers: Headers, upstream: string): Refusal | null {
  if (SIGV4.test(headers.get("authorization") ?? "")) return { reason: "signed for the tap's address", message: SIGNED };
  const host = new URL(upstream).host;
  if (headers.has("authorization") || headers.has("x-amz-security-token") || !isAwsHost(host)) return null;
  return {
    reason: "no credentials for AWS",
    message: `this request carries no credentials and the upstream ${host} is AWS, which refuses it; the tap does not sign requests: ${WHAT_WORKS}`,
  };
}

// In AWS's error shape, and a 400: Claude Code retries a 403 from Bedrock for minutes, as credentials it may refresh.
export function awsRefused(message: string): Response {
  const headers = { "x-amzn-errortype": "ValidationException", "x-should-retry": "false" };
  return jsonAnswer(400, { __type: "ValidationException", message: `sessiontap: ${message}` }, headers);
}

export function signedHeaderNames(headers: Headers): ReadonlySet<string> {
  const authorization = headers.get("authorization") ?? "";
  if (!SIGV4.test(authorization)) return new Set();
  const listed = /\bSignedHeaders=([^,\s]*)/i.exec(authorization)?.[1] ?? "";
  return new Set(listed.split(";").map((name) => name.trim().toLowerCase()).filter(Boolean));
}
