/**
 * `doctor`'s look at a running tap: whether something answers `/_tap/health` where Claude Code is pointed
 * (or where `--url` / `--port` say), mirroring where doctor looks, and every problem its health lists (a
 * failing upstream, queued commits) as a problem here too.
 */
import type { Config } from "../config/parse.ts";
import { isObject } from "../protocol/json.ts";
import type { CommandIo } from "./command-io.ts";
import { type Check, guardCheck, unmirroredChecks } from "./doctor-check.ts";
import { probeTap } from "./tap-probe.ts";

/** A tap's health, or why none answered (`down`: nothing answers at all, so requests sent there fail). */
export type Probe = { ok: true; health: Record<string, unknown> } | { ok: false; why: string; down: boolean };

/** What a tap's health route says, or why no tap answered. */
export async function probe(io: CommandIo, base: string, token: string | null): Promise<Probe> {
  const found = await probeTap(io.fetch, base, token);
  if (found.kind === "sessiontap") return { ok: true, health: found.health };
  if (found.kind === "locked") {
    return {
      ok: false,
      down: false,
      why: `${found.url} answers ${found.status}, but shows its details only with its token (${
        token === null ? "set SESSIONTAP_TOKEN" : "SESSIONTAP_TOKEN is not that token"
      })`,
    };
  }
  if (found.kind === "other") return { ok: false, down: false, why: `${found.url} answers, but is not a sessiontap tap (HTTP ${found.httpStatus})` };
  return { ok: false, down: true, why: `nothing answers at ${found.url} (${found.why})` };
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
