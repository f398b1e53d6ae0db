// `doctor`'s check of proxy mode (docs/DESIGN.md "Proxy mode"): HTTPS_PROXY must be the proxy of the tap doctor looked at, NO_PROXY
// must not send the API's host around it, its CA must cover that host, and NODE_EXTRA_CA_CERTS must hold that CA.
import { isObject } from "../protocol/json.ts";
import { hostTable } from "../config/proxy-settings.ts";
import { describe } from "../utils/describe-error.ts";
import type { CommandIo } from "./command-io.ts";
import { type Check, requestsFail } from "./doctor-check.ts";
import { claudeSetting, type Setting, type SettingsFile } from "./doctor-settings.ts";
import type { Probe } from "./doctor-tap.ts";

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);
const sameHost = (a: string, b: string) => a === b || (LOOPBACK.has(a) && LOOPBACK.has(b));

/** True when NO_PROXY's `list` sends `host` around the proxy (`*`, the host, or a domain it is under). */
function bypasses(list: string, host: string): boolean {
  return list.split(/[\s,]+/).filter(Boolean).some((entry) => {
    const name = entry.replace(/:\d+$/, "").replace(/^\*?\./, "").toLowerCase();
    return entry === "*" || host === name || host.endsWith(`.${name}`);
  });
}

/** The checks of `proxy` (HTTPS_PROXY as Claude Code sees it) against the tap doctor looked at, for `route.who` going to `route.host`. */
export async function proxyChecks(
  route: { who: string; host: string },
  proxy: Setting,
  settings: SettingsFile[],
  io: CommandIo,
  tap: { url: string; probe: Probe },
): Promise<Check[]> {
  const check = "HTTPS_PROXY";
  const about = `${proxy.value} ${proxy.where}`;
  const text = /^\w+:\/\//.test(proxy.value) ? proxy.value : `http://${proxy.value}`;
  if (!URL.canParse(text)) return [{ check, status: "fail", detail: `${about} is not a URL` }];
  const url = new URL(text);
  const noProxy = claudeSetting(settings, io.env, "NO_PROXY") ?? claudeSetting(settings, io.env, "no_proxy");
  if (noProxy !== null && bypasses(noProxy.value, route.host)) {
    const detail = `${noProxy.value} ${noProxy.where} sends ${route.host} around the proxy: ${route.who} talks to it directly and nothing is mirrored`;
    return [{ check: "NO_PROXY", status: "fail", detail }];
  }
  const health = tap.probe.ok && isObject(tap.probe.health.proxy) ? tap.probe.health.proxy : null;
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const atTap = sameHost(url.hostname, new URL(tap.url).hostname);
  const says = (status: Check["status"], detail: string): Check => ({ check, status, detail });
  let first: Check;
  if (health !== null && health.port === port && atTap) {
    const sentTo = isObject(health.routes) ? health.routes[route.host] : undefined;
    const elsewhere = typeof sentTo === "string" ? ` and sends to ${sentTo} (SESSIONTAP_PROXY_UPSTREAM), not to ${route.host} itself` : "";
    first = hostTable().terminates(route.host)
      ? says("ok", `${about} is the tap's proxy: ${route.who} goes through it to ${route.host}, which it mirrors${elsewhere} (proxy mode)`)
      : says("fail", `${about} is the tap's proxy, but ${route.host}, where ${route.who} goes, is not a host its CA covers: a blind tunnel, never mirrored`);
  } else if (tap.probe.ok && health === null && atTap) {
    first = says("fail", `${about}, but the tap at ${tap.url} runs no proxy: start it with --proxy-port ${port} (SESSIONTAP_PROXY_PORT)`);
  } else {
    const what = await proxyAt(io, url);
    first = what === "sessiontap"
      ? says("warn", `${about} is a sessiontap proxy, but not that of the tap at ${tap.url}: name its tap: sessiontap doctor --url URL`)
      : what.startsWith("nothing answers")
      // Never in the way: a proxy that is not there stops Claude Code, so say so and how to go around it.
      ? says("fail", `${about}: ${what}. ${requestsFail(check, proxy.fromSettings, `sessiontap serve --proxy-port ${port}`)}`)
      : says("fail", `${about} is not the tap's proxy (${what}): ${route.who} goes through it, and nothing is mirrored`);
  }
  return [first, await extraCaCheck(settings, io, health !== null && typeof health.ca === "string" ? health.ca : null, first.status === "ok")];
}

/** What answers at a proxy's address: "sessiontap" (a tap's proxy refuses a GET in its own words), or what else. */
async function proxyAt(io: CommandIo, url: URL): Promise<string> {
  try {
    const response = await io.fetch(new URL("/", url.origin), { signal: AbortSignal.timeout(2000), redirect: "manual" });
    const text = await response.text().catch(() => "");
    return response.status === 405 && text.includes("the tap's forward proxy") ? "sessiontap" : `something else answers there (HTTP ${response.status})`;
  } catch (error) {
    return `nothing answers at ${url.host} (${(error as Error).name === "TimeoutError" ? "timed out" : describe(error)})`;
  }
}

/** NODE_EXTRA_CA_CERTS against the tap's CA (`ca`, its certificate's file; null when not known). */
async function extraCaCheck(settings: SettingsFile[], io: CommandIo, ca: string | null, ours: boolean): Promise<Check> {
  const check = "NODE_EXTRA_CA_CERTS";
  const named = claudeSetting(settings, io.env, check);
  const fix = ca === null ? "" : `: export NODE_EXTRA_CA_CERTS=${ca}`;
  if (named === null) return { check, status: "fail", detail: `not set, so Claude Code refuses the proxy's certificates${fix}` };
  const about = `${named.value} ${named.where}`;
  if (ca === null || !ours) return { check, status: "ok", detail: about };
  if (named.value === ca) return { check, status: "ok", detail: `${about} is the tap's CA` };
  const [theirs, mine] = await Promise.all([io.fs.readText(named.value).catch(() => null), io.fs.readText(ca).catch(() => null)]);
  if (theirs !== null && mine !== null && theirs.includes(mine.trim())) return { check, status: "ok", detail: `${about} holds the tap's CA` };
  return {
    check,
    status: "fail",
    detail: `${about} ${theirs === null ? "cannot be read" : "does not hold the tap's CA"}, so Claude Code refuses its certificates${fix}`,
  };
}
