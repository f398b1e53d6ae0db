/**
 * `doctor`'s check of proxy mode (docs/DESIGN.md "Proxy mode"): `HTTPS_PROXY` must be the proxy of the tap
 * doctor looked at (its health names its port), `NO_PROXY` must not send the API's host around it, the host
 * must be one the tap terminates (its CA covers it: else a blind tunnel, never mirrored), and
 * `NODE_EXTRA_CA_CERTS` must name the tap's CA (health names the file), or a bundle holding it, or Claude
 * Code refuses the tap's certificates.
 */
import { isObject } from "../protocol/json.ts";
import { HostTable } from "../proxy/known-hosts.ts";
import { describe } from "../utils/describe-error.ts";
import type { CommandIo } from "./command-io.ts";
import { type Check, claudeSetting, requestsFail, type Setting, type SettingsFile } from "./doctor-check.ts";
import type { Probe } from "./doctor-tap.ts";

/** Names every loopback address is known by, for comparing hosts. */
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

/** True when `a` and `b` name the same host (any two loopback names do). */
function sameHost(a: string, b: string): boolean {
  return a === b || (LOOPBACK.has(a) && LOOPBACK.has(b));
}

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
  let url: URL;
  try {
    url = new URL(/^\w+:\/\//.test(proxy.value) ? proxy.value : `http://${proxy.value}`);
  } catch {
    return [{ check, status: "fail", detail: `${proxy.value} ${proxy.where} is not a URL` }];
  }
  const noProxy = claudeSetting(settings, io.env, "NO_PROXY") ?? claudeSetting(settings, io.env, "no_proxy");
  if (noProxy !== null && bypasses(noProxy.value, route.host)) {
    return [{
      check: "NO_PROXY",
      status: "fail",
      detail: `${noProxy.value} ${noProxy.where} sends ${route.host} around the proxy: ${route.who} talks to it directly and nothing is mirrored`,
    }];
  }
  const health = tap.probe.ok && isObject(tap.probe.health.proxy) ? tap.probe.health.proxy : null;
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const about = `${proxy.value} ${proxy.where}`;
  const out: Check[] = [];
  if (health !== null && health.port === port && sameHost(url.hostname, new URL(tap.url).hostname)) {
    const known = new HostTable([]).recognise(route.host);
    if (known.kind === "terminate") {
      out.push({ check, status: "ok", detail: `${about} is the tap's proxy: ${route.who} goes through it to ${route.host}, which it mirrors (proxy mode)` });
    } else {
      out.push({
        check,
        status: "fail",
        detail: `${about} is the tap's proxy, but ${route.host}, where ${route.who} goes, is not a host its CA covers: a blind tunnel, never mirrored`,
      });
    }
  } else if (tap.probe.ok && health === null && sameHost(url.hostname, new URL(tap.url).hostname)) {
    out.push({
      check,
      status: "fail",
      detail: `${about}, but the tap at ${tap.url} runs no proxy: start it with --proxy-port ${port} (SESSIONTAP_PROXY_PORT)`,
    });
  } else {
    const what = await proxyAt(io, url);
    out.push(
      what === "sessiontap"
        ? { check, status: "warn", detail: `${about} is a sessiontap proxy, but not that of the tap at ${tap.url}: name its tap: sessiontap doctor --url URL` }
        : what.startsWith("nothing answers")
        // Never in the way: a proxy that is not there stops Claude Code, so say so and how to go around it.
        ? { check, status: "fail", detail: `${about}: ${what}. ${requestsFail(check, proxy.fromSettings, `sessiontap serve --proxy-port ${port}`)}` }
        : { check, status: "fail", detail: `${about} is not the tap's proxy (${what}): ${route.who} goes through it, and nothing is mirrored` },
    );
  }
  const ca = health !== null && typeof health.ca === "string" ? health.ca : null;
  out.push(await extraCaCheck(settings, io, ca, out[0].status === "ok"));
  return out;
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
  if (named === null) {
    return {
      check,
      status: "fail",
      detail: `not set, so Claude Code refuses the proxy's certificates${ca === null ? "" : `: export NODE_EXTRA_CA_CERTS=${ca}`}`,
    };
  }
  if (ca === null || !ours) return { check, status: "ok", detail: `${named.value} ${named.where}` };
  if (named.value === ca) return { check, status: "ok", detail: `${named.value} ${named.where} is the tap's CA` };
  const [theirs, mine] = await Promise.all([io.fs.readText(named.value).catch(() => null), io.fs.readText(ca).catch(() => null)]);
  if (theirs !== null && mine !== null && theirs.includes(mine.trim())) {
    return { check, status: "ok", detail: `${named.value} ${named.where} holds the tap's CA` };
  }
  return {
    check,
    status: "fail",
    detail: `${named.value} ${named.where} ${theirs === null ? "cannot be read" : "does not hold the tap's CA"}, so Claude Code refuses its certificates: ` +
      `export NODE_EXTRA_CA_CERTS=${ca}`,
  };
}
