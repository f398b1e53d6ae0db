/**
 * `doctor`'s look at a running tap: whether something answers `/_tap/health` where Claude Code is pointed
 * (or where `--url` / `--port` say), mirroring where doctor looks, and every problem its health lists (a
 * failing upstream, queued commits) as a problem here too.
 */
import type { Config } from "../config/parse.ts";
import { isObject } from "../protocol/json.ts";
import { describe } from "../utils/describe-error.ts";
import type { CommandIo } from "./command-io.ts";
import type { Check } from "./doctor-check.ts";
import { guardCheck } from "./doctor-transcripts.ts";
import { unmirroredChecks } from "./doctor-unmirrored.ts";

/** A tap's health, or why none answered. */
export type Probe = { ok: true; health: Record<string, unknown> } | { ok: false; why: string };

/** What a tap's health route says, or why nothing answered. */
export async function probe(io: CommandIo, base: string, token: string | null): Promise<Probe> {
  let url: URL;
  try {
    url = new URL("/_tap/health", base.endsWith("/") ? base : `${base}/`);
  } catch {
    return { ok: false, why: `"${base}" is not a URL` };
  }
  try {
    const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
    const response = await io.fetch(url, { signal: AbortSignal.timeout(2000), redirect: "manual", headers });
    const body = (await response.json().catch(() => null)) as unknown;
    if (response.status === 200 && isObject(body) && (body.status === "ok" || body.status === "degraded") && "runtime" in body) {
      return { ok: true, health: body };
    }
    if (response.status === 200 && isObject(body) && Object.keys(body).join() === "status") {
      return {
        ok: false,
        why: `${url.origin} answers ${String(body.status)}, but shows its details only with its token (${
          token === null ? "set SESSIONTAP_TOKEN" : "SESSIONTAP_TOKEN is not that token"
        })`,
      };
    }
    return { ok: false, why: `${url.origin} answers, but is not a sessiontap tap (HTTP ${response.status})` };
  } catch (error) {
    return { ok: false, why: `nothing answers at ${url.origin} (${(error as Error).name === "TimeoutError" ? "timed out" : describe(error)})` };
  }
}

/** Health's problems as checks: "upstream: …" becomes check "tap upstream", and so on. */
function problemChecks(health: Record<string, unknown>): Check[] {
  const problems = Array.isArray(health.problems) ? health.problems.filter((p): p is string => typeof p === "string") : [];
  if (health.status === "degraded" && problems.length === 0) return [{ check: "tap health", status: "fail", detail: "degraded (no problem named)" }];
  return problems.map((p) => {
    const colon = p.indexOf(": ");
    return colon > 0 && colon < 20
      ? { check: `tap ${p.slice(0, colon)}`, status: "fail", detail: p.slice(colon + 2) }
      : { check: "tap health", status: "fail", detail: p };
  });
}

/** The check of the tap at `tapUrl` (found through `chosen`), with its health's own checks after it. */
export async function tapChecks(config: Readonly<Config>, io: CommandIo, tapUrl: string, chosen: string): Promise<{ tap: Probe; checks: Check[] }> {
  const tap = await probe(io, tapUrl, config.token);
  if (!tap.ok) {
    const detail = `${tap.why} (${chosen}); start it: sessiontap serve${
      chosen === "--port" || chosen === "--url" ? "" : ", or name it: sessiontap doctor --url URL"
    }`;
    return { tap, checks: [{ check: "tap", status: "fail", detail }] };
  }
  const mirror = tap.health.mirror;
  const about = `${tapUrl} (${chosen})`;
  let check: Check;
  if (mirror === "off") {
    check = { check: "tap", status: "warn", detail: `${about} is up, but runs with the mirror off (--no-mirror / SESSIONTAP_MIRROR=off)` };
  } else if (isObject(mirror) && typeof mirror.root === "string" && mirror.root !== config.mirrorDir) {
    check = {
      check: "tap",
      status: "warn",
      detail: `${about} is up, mirroring to ${mirror.root}; this doctor looked at ${config.mirrorDir} (pass --mirror-dir)`,
    };
  } else check = { check: "tap", status: "ok", detail: `${about} is up (sessiontap ${String(tap.health.version)}, ${String(tap.health.runtime)})` };
  return { tap, checks: [check, ...guardCheck(tap.health), ...unmirroredChecks(tap.health), ...problemChecks(tap.health)] };
}
