/**
 * What the mirror reads of an answer's head (docs/DESIGN.md "Providers"): how its body is framed — the
 * Messages API's server-sent events (Anthropic and Vertex alike), AWS's event stream (Bedrock), or one JSON
 * body — and the request id its records carry. Pure.
 */

/** The framings the mirror reads. */
export type Framing = "sse" | "eventstream" | "json";

/** The framing a `content-type` announces. */
export function responseFraming(contentType: string | null): Framing {
  const type = (contentType ?? "").toLowerCase();
  if (type.includes("text/event-stream")) return "sse";
  if (type.includes("application/vnd.amazon.eventstream")) return "eventstream";
  return "json";
}

/**
 * The answer's request id: the API's `request-id`, else AWS's `x-amzn-requestid`, as Claude Code itself
 * records it on Bedrock (so the two transcripts of one answer agree, and readers count it once).
 */
export function responseRequestId(headers: Headers): string | null {
  return headers.get("request-id") || headers.get("x-amzn-requestid");
}
