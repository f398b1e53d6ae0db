/**
 * A failed connection in our own words. The runtimes word the same failure differently and address
 * someone else: Bun's fetch says "ECONNREFUSED: Unable to connect. Is the computer able to access the
 * url?", Deno's "error sending request for url (…): client error (Connect): tcp connect error: Connection
 * refused (os error 111)", and Bun.serve "Failed to start server. Is port 8787 in use?". No such sentence
 * reaches the user (docs/DESIGN.md "Never in the way"). Pure.
 */

/** What happened to a connection, by the codes and phrases both runtimes use; null when it is not one of these. */
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
  if (/EADDRNOTAVAIL|AddrNotAvailable|Cannot assign requested address|address not available/i.test(text)) {
    return "the address is not one of this machine's";
  }
  if (/Requests to port \d+ are blocked/i.test(text)) return "the runtime refuses that port";
  return null;
}

/** A runtime's advice to its own user, cut from a message that is otherwise kept. */
export function withoutRuntimeAdvice(message: string): string {
  return message
    .replace(/\s*Is the computer able to access the url\?/gi, "")
    .replace(/\s*For more information, pass `verbose: true` in the second argument to fetch\(\)/gi, "")
    .replace(/\s*Is port \d+ in use\?/gi, "")
    .trim();
}
