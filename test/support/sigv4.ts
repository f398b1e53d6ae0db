// AWS Signature Version 4 for the tests, with AWS's own signer (@smithy/signature-v4, the one Claude Code's
// Bedrock client signs with): `sigV4Problem` checks a received request as AWS does — the body against its
// x-amz-content-sha256, then the signature made again from the method, the path and query as they arrived,
// each header SignedHeaders names and the test's known secret — and `signLikeClaudeCode` signs a request
// the way Claude Code's Bedrock client does, for tests that send one by hand.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { Sha256 } from "@aws-crypto/sha256-js";
import { SignatureV4 } from "@smithy/signature-v4";

/** The credentials and scope a test's requests are signed with. */
export interface SigV4Keys {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  service: string;
}

/** The test's AWS credentials (AWS's documentation example, never a real key). */
export const TEST_AWS: SigV4Keys = {
  accessKeyId: "AKIDEXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  region: "us-east-1",
  service: "bedrock",
};

/** A request as a server received it: the target as it came (path and query), its headers (lower case) and body. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

const signer = (keys: SigV4Keys) =>
  new SignatureV4({
    service: keys.service,
    region: keys.region,
    credentials: { accessKeyId: keys.accessKeyId, secretAccessKey: keys.secretAccessKey },
    sha256: Sha256,
  });

/** A query string's parameters, decoded, as the signer takes them. */
function queryOf(search: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const part of search.split("&").filter(Boolean)) {
    const eq = part.indexOf("=");
    const [k, v] = (eq < 0 ? [part, ""] : [part.slice(0, eq), part.slice(eq + 1)]).map((s) => decodeURIComponent(s));
    const had = out[k];
    out[k] = had === undefined ? v : [...(Array.isArray(had) ? had : [had]), v];
  }
  return out;
}

/**
 * Why AWS would refuse `req`, signed for `host` (the host the server stands for: a stub behind
 * SESSIONTAP_PROXY_UPSTREAM is reached at its own address, where AWS would have been reached at `host`), or
 * null when its signature is valid.
 */
export async function sigV4Problem(req: ReceivedRequest, host: string, keys: SigV4Keys = TEST_AWS): Promise<string | null> {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/
    .exec(req.headers.authorization ?? "");
  if (auth === null) return `not a SigV4 authorization: ${JSON.stringify(req.headers.authorization ?? null)}`;
  const [, keyId, day, region, service, signedList] = auth;
  if (keyId !== keys.accessKeyId || region !== keys.region || service !== keys.service) return `signed for ${keyId}/${region}/${service}`;
  const date = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(req.headers["x-amz-date"] ?? "");
  if (date === null || !req.headers["x-amz-date"].startsWith(day)) return "no x-amz-date of the credential's day";
  const sha = createHash("sha256").update(req.body).digest("hex");
  if (req.headers["x-amz-content-sha256"] !== undefined && req.headers["x-amz-content-sha256"] !== sha) return "the body is not the one signed";
  const headers: Record<string, string> = {};
  for (const name of signedList.split(";")) {
    const value = name === "host" ? host : req.headers[name];
    if (value === undefined) return `the signed header ${name} did not arrive`;
    headers[name] = value;
  }
  const q = req.url.indexOf("?");
  const [path, search] = q < 0 ? [req.url, ""] : [req.url.slice(0, q), req.url.slice(q + 1)];
  const [, y, mo, d, h, mi, s] = date.map(Number);
  const again = await signer(keys).sign(
    { method: req.method, protocol: "https:", hostname: host, path, query: queryOf(search), headers, body: req.body },
    { signingDate: new Date(Date.UTC(y, mo - 1, d, h, mi, s)) },
  );
  return again.headers.authorization === req.headers.authorization ? null : "the signature does not match the request";
}

/**
 * Signs a request to `https://host` + `target` as Claude Code's Bedrock client does (every header it sends
 * but the connection's own, the body's SHA-256 in x-amz-content-sha256); returns the headers to send.
 */
export async function signLikeClaudeCode(
  method: string,
  host: string,
  target: string,
  headers: Record<string, string>,
  body: string,
): Promise<Record<string, string>> {
  const q = target.indexOf("?");
  const [path, search] = q < 0 ? [target, ""] : [target.slice(0, q), target.slice(q + 1)];
  const signed = await signer(TEST_AWS).sign({
    method,
    protocol: "https:",
    hostname: host,
    path,
    query: queryOf(search),
    headers: { ...headers, host },
    body: Buffer.from(body, "utf8"),
  });
  return signed.headers;
}
