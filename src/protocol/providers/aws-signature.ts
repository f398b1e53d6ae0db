/**
 * What base-URL mode cannot forward to AWS (docs/DESIGN.md "Bedrock's signatures"). A SigV4 signature covers
 * the Host header, so a request Claude Code signed for the tap's own address is refused by AWS however
 * faithfully it is forwarded; and AWS refuses a request that carries no credentials at all. The tap does not
 * sign for the user: both are answered by the tap with one line that says what works instead. A bearer
 * token (a Bedrock API key, `AWS_BEARER_TOKEN_BEDROCK`) names no host and is forwarded like any other
 * credential. Pure.
 */

/** Why a request is refused, for the events log, and the line the client is shown. */
export interface Refusal {
  reason: "signed for the tap's address" | "no credentials for AWS";
  message: string;
}

const WHAT_WORKS = "run the tap in proxy mode (HTTPS_PROXY), where Claude Code's own signature stays valid, or use a Bedrock API key " +
  '(AWS_BEARER_TOKEN_BEDROCK); see docs/providers.md, "AWS Bedrock"';

/** True for an AWS endpoint's host. */
export function isAwsHost(host: string): boolean {
  return /(?:^|\.)amazonaws\.com(?:\.cn)?$/i.test(host.replace(/:\d+$/, ""));
}

/** Why `headers` cannot be forwarded to `upstream` (a URL) unchanged, or null when they can. */
export function awsRefusal(headers: Headers, upstream: string): Refusal | null {
  const authorization = headers.get("authorization");
  if (authorization !== null && /^AWS4-HMAC-SHA256\b/i.test(authorization.trimStart())) {
    return {
      reason: "signed for the tap's address",
      message: "this request is signed with AWS SigV4 for the tap's own address, and a signature covers the Host, so AWS would refuse it; " +
        `the tap does not re-sign requests: ${WHAT_WORKS}`,
    };
  }
  if (authorization !== null || !upstream.includes("amazonaws.com") || headers.get("x-amz-security-token") !== null) return null;
  const host = new URL(upstream).host;
  if (isAwsHost(host)) {
    return {
      reason: "no credentials for AWS",
      message: `this request carries no credentials and the upstream ${host} is AWS, which refuses it; the tap does not sign requests: ${WHAT_WORKS}`,
    };
  }
  return null;
}

/**
 * The headers a SigV4 signature covers (its `SignedHeaders=`, lower case), which must reach AWS as the client
 * sent them; empty when the request is not signed so (docs/DESIGN.md "Bedrock's signatures").
 */
export function signedHeaderNames(headers: Headers): ReadonlySet<string> {
  const authorization = headers.get("authorization") ?? "";
  if (!/^AWS4-HMAC-SHA256\b/i.test(authorization.trimStart())) return new Set();
  const listed = /\bSignedHeaders=([^,\s]*)/i.exec(authorization)?.[1] ?? "";
  return new Set(listed.split(";").map((name) => name.trim().toLowerCase()).filter(Boolean));
}
