// Who may reach the viewer by name while the tap listens on loopback: docs/DESIGN.md "Trust boundaries".

/** An IPv4-mapped loopback (`::ffff:127.0.0.1`, `::ffff:7f00:1`) too. */
export function isLoopback(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, "");
  const v6 = h.includes(":") && URL.canParse(`http://[${h}]`) ? new URL(`http://[${h}]`).hostname : null;
  return h === "localhost" || v6 === "[::1]" || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(v6 ?? "") || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** The Host names the viewer answers to when the tap listens on `host`; null: any. */
export function allowedHosts(host: string): Set<string> | null {
  if (!isLoopback(host)) return null;
  const bound = host.trim().toLowerCase();
  // A client may name the IPv4-mapped loopback address as typed, or as a URL writes it.
  const names = ["localhost", "127.0.0.1", "[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]"];
  return new Set([...names, bound.includes(":") && !bound.startsWith("[") ? `[${bound}]` : bound]);
}

/** "[::1]:8787" → "[::1]", lower case. */
export function hostName(host: string | null | undefined): string {
  const h = (host ?? "").trim().toLowerCase();
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1);
  const colon = h.indexOf(":");
  return colon < 0 ? h : h.slice(0, colon);
}
