// Errors as one short, content-free line for stderr, health and the events log, in our words (docs/DESIGN.md "Never in the way"); counts too.

// Code (or class) and first line, a `cause`'s text where the message says nothing ("fetch failed"), and URLs cut to their origin:
// a path or query may carry a secret.
export function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const name = error instanceof Error ? error.name : typeof error;
  let message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  if (cause instanceof Error && /^(fetch failed|network error)?$/i.test(message.trim())) message = cause.message;
  message = message.split("\n")[0].replace(/\b(https?:\/\/[^/\s)]+)[^\s)]*/g, "$1").slice(0, 200).trim();
  const label = typeof code === "string" && code !== "" ? code : name;
  const failure = networkFailure(typeof code === "string" ? code : "", name, message);
  if (failure !== null) return failure;
  message = message.replace(RUNTIME_ADVICE, "").trim();
  if (message === "" || message === label) return label;
  return message.startsWith(label) ? message : `${label}: ${message}`;
}

/** describe() for an error met while answering a request: a runtime's message may quote its URL, so quotes, URLs and paths go too. */
export function describeBare(error: unknown): string {
  return describe(error)
    .replace(/'[^']*'?|"[^"]*"?|`[^`]*`?/g, "…")
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/\S*/gi, "…")
    .replace(/(^|\s)\/\S*/g, "$1…");
}

// The runtimes word one failure differently and address their own users (Bun's "Is the computer able to access the url?",
// Deno's "client error (Connect): tcp connect error"): no such sentence reaches ours.
const RUNTIME_ADVICE =
  /\s*(?:Is the computer able to access the url\?|For more information, pass `verbose: true` in the second argument to fetch\(\)|Is port \d+ in use\?)/gi;

export function networkFailure(code: string, name: string, message: string): string | null {
  const text = `${code} ${message}`;
  if (/ECONNREFUSED|ConnectionRefused|Connection refused/i.test(text)) return "connection refused";
  if (/ENOTFOUND|EAI_AGAIN|dns error|failed to lookup address|Name or service not known|nodename nor servname/i.test(text)) return "no such host";
  if (/ECONNRESET|ConnectionReset|connection reset|closed unexpectedly|connection closed before message completed/i.test(text)) {
    return "the connection was reset";
  }
  if (/EHOSTUNREACH|ENETUNREACH|No route to host|Network is unreachable/i.test(text)) return "no route to the host";
  if (code === "ETIMEDOUT" || name === "TimeoutError") return "timed out";
  if (/certificate|CERT_|tls handshake|SSL/i.test(text)) return `the TLS handshake failed${/certificate|CERT_/i.test(text) ? " (certificate)" : ""}`;
  if (/EADDRINUSE|AddrInUse|address already in use|Is port \d+ in use/i.test(text)) return "the address is already in use";
  if (/EADDRNOTAVAIL|AddrNotAvailable|Cannot assign requested address|address not available/i.test(text)) return "the address is not one of this machine's";
  if (/Requests to port \d+ are blocked/i.test(text)) return "the runtime refuses that port";
  return null;
}

/** "1 commit", "3 commits"; `many` where the plural is not the noun and an "s". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
