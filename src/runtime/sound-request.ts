/**
 * Odd requests made whole before the app sees them. HTTP/1.0 without a Host, or `Host:` with nothing in
 * it, left Bun with a request URL that is only a path (Deno filled in a name of its own), so routing saw a
 * mangled path and forwarding threw; a Host that is not a host at all (`a b`, `[::1`, `x:99999`, `x/y`)
 * made the URL unparseable, or — `x/y` — moved the path. Here an absent or empty Host takes the listening
 * address, and any other Host must be a host name or address with an optional port, else the request is
 * answered 400 at once. Nothing of the request is put in a message.
 */
/** A host name or bracketed IPv6 address, then an optional port. */
const HOST = /^(?:\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9._~-]+)?\]|[A-Za-z0-9._~-]+)(?::(\d{1,5}))?$/;

/** The Anthropic-shaped error every odd request is answered with (written here: the runtime adapter imports only utils/). */
function badRequest(why: string): Response {
  const body = { type: "error", error: { type: "invalid_request_error", message: `sessiontap: ${why}` } };
  return new Response(JSON.stringify(body), { status: 400, headers: { "content-type": "application/json", connection: "close" } });
}

/** The path and query a request asked for, whatever form its URL took. */
function target(url: string): string {
  if (url.startsWith("/")) return url;
  const scheme = url.indexOf("://");
  if (scheme < 0) return "/";
  const slash = url.indexOf("/", scheme + 3);
  return slash < 0 ? "/" : url.slice(slash);
}

/**
 * `request` with a URL routing can trust, or the 400 it gets instead. `own` is the listening authority
 * (`127.0.0.1:8787`), used when the client named none.
 */
export function soundRequest(request: Request, own: string): Request | Response {
  const host = (request.headers.get("host") ?? "").trim();
  if (host !== "") {
    const m = HOST.exec(host);
    if (m === null || (m[1] !== undefined && Number(m[1]) > 65535)) return badRequest("the Host header is not a host name or address");
    if (URL.canParse(request.url) && new URL(request.url).host !== "") return request;
  }
  const url = new URL(target(request.url), `http://${own}`);
  if (url.host !== new URL(`http://${own}`).host) return badRequest("the request target is not a path");
  return new Request(url, request);
}

/** `host:port` of a listening address, an IPv6 address in brackets (the authority of a URL). */
export function authority(hostname: string, port: number): string {
  return `${hostname.includes(":") && !hostname.startsWith("[") ? `[${hostname}]` : hostname}:${port}`;
}
