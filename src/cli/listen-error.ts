/**
 * The one line `serve` prints when it cannot listen, in our words (docs/DESIGN.md "Never in the way"): a
 * port another sessiontap holds names that tap (pid and version, from its health), any other holder is
 * "in use", and a privileged port or a foreign address says which setting to change.
 */
import type { Config } from "../config/parse.ts";
import { describe } from "../utils/describe-error.ts";
import { probeTap, whichTap } from "./tap-probe.ts";

/** The error code a runtime's listen failure carries ("EADDRINUSE", …), or "". */
export function listenCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code !== "") return code;
  const text = String((error as Error | null)?.message ?? error);
  return /Is port \d+ in use|address already in use/i.test(text) ? "EADDRINUSE" : "";
}

/** True when `error` is a failure to listen (rather than, say, a price file that cannot be read). */
export function isListenError(error: unknown): boolean {
  return ["EADDRINUSE", "EACCES", "EADDRNOTAVAIL", "EPERM"].includes(listenCode(error));
}

/** The address a local client reaches a tap listening on `host` by. */
export function localAddress(host: string): string {
  const reach = host === "0.0.0.0" ? "127.0.0.1" : host === "::" || host === "[::]" ? "::1" : host;
  return reach.includes(":") && !reach.startsWith("[") ? `[${reach}]` : reach;
}

/** The line for a failure to listen on the config's host and port (the holder of a taken port is asked who it is). */
export async function listenFailure(config: Readonly<Config>, error: unknown, fetcher: typeof fetch): Promise<string> {
  const where = `${config.host}:${config.port}`;
  const code = listenCode(error);
  if (code === "EADDRINUSE") {
    const url = `http://${localAddress(config.host)}:${config.port}`;
    const holder = await probeTap(fetcher, url, config.token, 1000);
    if (holder.kind === "sessiontap") {
      return `sessiontap: a sessiontap is already running on ${where} (${whichTap(holder.health)}): use it (export ANTHROPIC_BASE_URL=${url}), ` +
        `or pick another port with --port`;
    }
    if (holder.kind === "locked") {
      return `sessiontap: a sessiontap is already running on ${where} (it names its pid only with its token): use it, or pick another port with --port`;
    }
    return `sessiontap: port ${config.port} is in use on ${config.host}; pick another with --port (or SESSIONTAP_PORT)`;
  }
  if (code === "EACCES" || code === "EPERM") {
    return `sessiontap: cannot listen on ${where}: permission denied (ports below 1024 need privileges); pick another with --port`;
  }
  if (code === "EADDRNOTAVAIL") return `sessiontap: cannot listen on ${where}: ${config.host} is not an address of this machine (--host)`;
  return `sessiontap: cannot listen on ${where} (${describe(error)})`;
}
