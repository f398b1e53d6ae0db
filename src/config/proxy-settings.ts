/**
 * The forward-proxy settings (docs/DESIGN.md "Proxy mode"): off unless a proxy port is set. Pure: flags and
 * environment in, frozen settings out, or a UsageError naming the setting.
 */
import { type Env, expandHome, httpUrl, integer, onOff, pick, UsageError } from "./values.ts";

/** How the proxy runs. */
export interface ProxySettings {
  /** The port it listens on (0: a free one), on the tap's own address. */
  port: number;
  /** Host names it terminates besides the built-in table (lower case), mirrored like api.anthropic.com. */
  addedHosts: readonly string[];
  /** A known host's traffic sent to another upstream (an origin, optional base path, no trailing slash). */
  upstreams: Readonly<Record<string, string>>;
  /** Where the local CA lives (its key 0600, the directory 0700). */
  caDir: string;
  /** Longest wait for a CONNECT head, a TLS handshake, the rest of a request head, a tunnel's connect. */
  timeoutMs: number;
  /** Tunnel hosts it does not know (blind, never decrypted); off refuses them. */
  tunnel: boolean;
}

/** A DNS name as a CONNECT target or a setting may give it (lower case). */
const HOST_NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** True for a host name (not an address, not a pattern). */
export function isHostName(name: string): boolean {
  return HOST_NAME.test(name) && !/^[\d.]+$/.test(name);
}

/** The proxy's settings, or null when no proxy port is set. `home` expands `~`; the CA's default follows XDG. */
export function proxySettings(flags: Map<string, string | true>, env: Env, home: string): Readonly<ProxySettings> | null {
  const portRaw = pick(flags, "--proxy-port", env, "SESSIONTAP_PROXY_PORT");
  if (portRaw === undefined) return null;
  const port = integer("proxy port (--proxy-port / SESSIONTAP_PROXY_PORT)", portRaw, 0, 65535);
  const addedHosts = (env.SESSIONTAP_PROXY_HOSTS ?? "").split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "");
  for (const host of addedHosts) {
    if (!isHostName(host)) throw new UsageError(`SESSIONTAP_PROXY_HOSTS takes host names separated by commas, got "${host}"`);
  }
  const upstreams: Record<string, string> = {};
  for (const pair of (env.SESSIONTAP_PROXY_UPSTREAM ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const eq = pair.indexOf("=");
    const host = pair.slice(0, Math.max(eq, 0)).trim().toLowerCase();
    if (eq < 0 || !isHostName(host)) throw new UsageError(`SESSIONTAP_PROXY_UPSTREAM takes HOST=URL pairs separated by commas, got "${pair}"`);
    const url = httpUrl(`SESSIONTAP_PROXY_UPSTREAM (for ${host})`, pair.slice(eq + 1).trim());
    if (url.username || url.password || url.search || url.hash) {
      throw new UsageError(`SESSIONTAP_PROXY_UPSTREAM (for ${host}) must not carry credentials, a query or a fragment`);
    }
    upstreams[host] = url.origin + url.pathname.replace(/\/+$/, "");
  }
  const configHome = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME.startsWith("/") ? env.XDG_CONFIG_HOME : `${home.replace(/\/+$/, "")}/.config`;
  const caDir = expandHome(env.SESSIONTAP_CA_DIR || `${configHome}/sessiontap`, home);
  const timeoutMs = integer("SESSIONTAP_PROXY_TIMEOUT_MS", env.SESSIONTAP_PROXY_TIMEOUT_MS || "10000", 100, 600_000);
  const tunnelRaw = env.SESSIONTAP_PROXY_TUNNEL;
  const tunnel = tunnelRaw ? onOff("SESSIONTAP_PROXY_TUNNEL", tunnelRaw, ["on"], ["off"]) : true;
  return Object.freeze({ port, addedHosts: Object.freeze(addedHosts), upstreams: Object.freeze(upstreams), caDir, timeoutMs, tunnel });
}
