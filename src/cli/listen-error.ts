/**
 * The one line `serve` prints when it cannot listen, in our words (docs/DESIGN.md "Never in the way"): a
 * port another sessiontap holds names that tap (pid and version, from its health), any other holder is
 * "in use", and a privileged port or a foreign address says which setting to change.
 */
import type { Config } from "../config/parse.ts";
import { describe } from "../utils/describe-error.ts";
import { localAddress, type Probe, probeTap, proofKey, unprovenWhy, whichTap } from "./tap-probe.ts";

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

/** The line for a failure to listen on the config's host and port, and what holds a taken port (asked to prove it is this user's tap). */
export async function listenFailure(config: Readonly<Config>, error: unknown, fetcher: typeof fetch): Promise<{ line: string; holder: Probe["kind"] | null }> {
  const where = `${config.host}:${config.port}`;
  const code = listenCode(error);
  const fail = (line: string) => ({ line: `sessiontap: ${line}`, holder: null });
  if (code === "EACCES" || code === "EPERM") {
    return fail(`cannot listen on ${where}: permission denied (ports below 1024 need privileges); pick another with --port`);
  }
  if (code === "EADDRNOTAVAIL") return fail(`cannot listen on ${where}: ${config.host} is not an address of this machine (--host)`);
  if (code !== "EADDRINUSE") return fail(`cannot listen on ${where} (${describe(error)})`);
  const url = `http://${localAddress(config.host)}:${config.port}`;
  const holder = await probeTap(fetcher, url, await proofKey(config.mirror, config.mirrorDir), config.token, { timeoutMs: 1000 });
  const line = holder.kind === "mine"
    ? `sessiontap: a sessiontap is already running on ${where} (${
      whichTap(holder.health)
    }): use it (export ANTHROPIC_BASE_URL=${url}), or pick another port with --port`
    : holder.kind === "unproven"
    ? `sessiontap: port ${config.port} on ${config.host} is held by something that could not prove it is this user's sessiontap ${unprovenWhy(config)}; ` +
      `pick another port with --port (or SESSIONTAP_PORT)`
    : `sessiontap: port ${config.port} is in use on ${config.host}; pick another with --port (or SESSIONTAP_PORT)`;
  return { line, holder: holder.kind };
}
