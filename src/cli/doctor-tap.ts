// `doctor`'s look at the tap Claude Code uses (or `--url` / `--port`): up, mirroring where doctor looks, and the
// problems its health lists, each a check here too.
import type { Config } from "../config/parse.ts";
import { isObject } from "../protocol/json.ts";
import type { CommandIo } from "./command-io.ts";
import { type Check, guardCheck, unmirroredChecks } from "./doctor-check.ts";
import { probeTap, proofKey, tokenLeftFor } from "./tap-probe.ts";

/** A tap's health, or why none answered (`down`: nothing does, so requests sent there fail). `proven`: it proved it is this user's. */
export type Probe = { ok: true; health: Record<string, unknown>; proven: boolean } | { ok: false; why: string; down: boolean };

/** Another root than doctor's, or "off": a tap of this user's that cannot prove itself, and says so of itself. */
function otherRoot(health: Record<string, unknown> | null, config: Readonly<Config>): string | null {
  const mirror = health?.mirror;
  return mirror === "off" ? "off" : isObject(mirror) && typeof mirror.root === "string" && mirror.root !== config.mirrorDir ? mirror.root : null;
}

export async function probe(io: CommandIo, base: string, config: Readonly<Config>): Promise<Probe> {
  // Only a tap that proves it is this user's is sent the token (cli/tap-probe.ts).
  const token = config.token ?? await tokenLeftFor(io.fs, config.mirrorDir, base);
  const found = await probeTap(io.fetch, base, await proofKey(true, config.mirrorDir), token);
  if (found.kind === "none") return { ok: false, down: true, why: `nothing answers at ${found.url} (${found.why})` };
  if (found.kind === "other") return { ok: false, down: false, why: `${found.url} answers, but is not a sessiontap tap (HTTP ${found.httpStatus})` };
  if (found.health !== null && (found.kind === "mine" || otherRoot(found.health, config) !== null)) {
    return { ok: true, health: found.health, proven: found.kind === "mine" };
  }
  // A tap proves itself for the address it listens at; a name (localhost) may lead elsewhere too.
  const host = new URL(found.url).hostname;
  const suspect = /^(\[.*\]|[\d.]+)$/.test(host) ? "another user's server on the port?" : `a tap proves itself for its address: name that, not ${host}`;
  const why = found.kind === "unproven"
    ? `answers as a sessiontap, but could not prove it is this user's tap mirroring to ${config.mirrorDir} (${suspect}); doctor sent it no token`
    : `answers ${found.status}, but shows its details only with its token (${
      config.token === null ? "set SESSIONTAP_TOKEN" : "SESSIONTAP_TOKEN is not that token"
    })`;
  return { ok: false, down: false, why: `${found.url} ${why}` };
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
  const tap = await probe(io, tapUrl, config);
  if (!tap.ok) {
    const detail = `${tap.why} (${chosen}); start it: sessiontap serve${
      chosen === "--port" || chosen === "--url" ? "" : ", or name it: sessiontap doctor --url URL"
    }`;
    return { tap, checks: [{ check: "tap", status: "fail", detail }] };
  }
  const about = `${tapUrl} (${chosen})`;
  const root = otherRoot(tap.health, config);
  const check: Check = root === "off"
    ? { check: "tap", status: "warn", detail: `${about} is up, but runs with the mirror off (--no-mirror / SESSIONTAP_MIRROR=off)` }
    : root !== null
    ? { check: "tap", status: "warn", detail: `${about} is up, mirroring to ${root}; this doctor looked at ${config.mirrorDir} (pass --mirror-dir)` }
    : { check: "tap", status: "ok", detail: `${about} is up (sessiontap ${String(tap.health.version)}, ${String(tap.health.runtime)})` };
  return { tap, checks: [check, ...guardCheck(tap.health), ...unmirroredChecks(tap.health), ...problemChecks(tap.health)] };
}
