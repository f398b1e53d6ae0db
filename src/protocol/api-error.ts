/**
 * An answer the tap gives itself, shaped like the API's own errors (docs/DESIGN.md "Passthrough"), so
 * Claude Code reports and retries it as it would any API error. Pure: a web-standard Response.
 */

/** The error `{"type":"error","error":{"type":…,"message":"sessiontap: …"}}` with `status`. */
export function apiError(status: number, type: string, message: string, headers: Record<string, string> = {}): Response {
  const body = { type: "error", error: { type, message: `sessiontap: ${message}` } };
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}
