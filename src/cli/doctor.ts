/**
 * `sessiontap doctor`: checks what makes a user lose a transcript or bypass the tap, each as ok / warn /
 * FAIL with what to do; exit 1 when any check fails.
 *
 * - the mirror root: a real directory of this user's, private (0700), writable, with free space; and
 *   nothing in its top levels that the tap would refuse (another user's, open to others, a link);
 * - the tap Claude Code uses (`--url` / `--port` name another) and its health (cli/doctor-tap.ts);
 * - the way Claude Code reaches it, as its settings and environment say (cli/doctor-route.ts): the base
 *   URL of the API it talks to (Anthropic's, Vertex AI's or Bedrock's), which must be a tap, or
 *   `HTTPS_PROXY` and `NODE_EXTRA_CA_CERTS`, which must be the tap's proxy and CA (cli/doctor-proxy.ts);
 * - Claude Code's `cleanupPeriodDays` against the mirror's retention (cli/doctor-retention.ts);
 * - recent sessions whose Claude Code transcript is a stub, missing, behind the mirror or torn, and the
 *   guard's state and alerts (cli/doctor-transcripts.ts), each with the command that fixes it.
 */
import type { Config } from "../config/parse.ts";
import { untrusted } from "../storage/trusted-path.ts";
import { plantedEntries } from "./doctor-tree.ts";
import type { CommandIo } from "./command-io.ts";
import { bytesShort } from "../usage/format.ts";
import type { Check } from "./doctor-check.ts";
import { cleanupPeriod, retention } from "./doctor-retention.ts";
import { claudeRoute, routeChecks, safeOrigin } from "./doctor-route.ts";
import { type SettingsFile, settingsFiles } from "./doctor-settings.ts";
import { tapChecks } from "./doctor-tap.ts";
import { lastDrill } from "./drill.ts";
import { alertedSessions, transcriptChecks } from "./doctor-transcripts.ts";
import { join } from "../storage/paths.ts";
import { plural } from "../utils/plural.ts";
import { terminalSafeJson } from "../transcript/control-chars.ts";

export type { Check };

const MIB = 1024 * 1024;

/** Runs `doctor`. */
export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const settings = await settingsFiles(config, io); // read once: two checks look at them
  const tap = await tapAndRoute(config, io, settings);
  const checks = [
    ...(await mirrorRoot(config, io)),
    ...tap.checks,
    ...cleanupPeriod(config, settings),
    ...retention(config, settings),
    ...(await transcriptChecks(config, io, alertedSessions(tap.health))),
    ...(await lastDrill(config, io)),
  ];
  const fails = checks.filter((c) => c.status === "fail").length;
  const warns = checks.filter((c) => c.status === "warn").length;
  if (config.json) {
    io.stdout(terminalSafeJson(JSON.stringify(checks, null, 2)) + "\n");
  } else {
    const width = Math.max(...checks.map((c) => c.check.length));
    const lines = checks.map((c) => `${c.status === "fail" ? "FAIL" : c.status.padEnd(4)}  ${c.check.padEnd(width)}  ${c.detail}`);
    lines.push("", fails === 0 && warns === 0 ? "All checks passed." : `${plural(fails, "problem")}, ${plural(warns, "warning")}.`);
    io.stdout(lines.join("\n") + "\n");
  }
  return fails > 0 ? 1 : 0;
}

/** The mirror root: kind, mode, writability, free space. */
async function mirrorRoot(config: Readonly<Config>, io: CommandIo): Promise<Check[]> {
  const root = config.mirrorDir;
  const check = "mirror root";
  const info = await io.fs.lstat(root);
  if (info === null) return [{ check, status: "warn", detail: `${root} does not exist yet (the tap creates it, 0700, on its first write)` }];
  if (info.isSymbolicLink) {
    return [{
      check,
      status: "fail",
      detail: `${root} is a symbolic link; the tap refuses it: point --mirror-dir / SESSIONTAP_MIRROR_DIR at the real directory`,
    }];
  }
  if (!info.isDirectory) return [{ check, status: "fail", detail: `${root} is not a directory` }];
  const out: Check[] = [];
  const mode = (info.mode & 0o777).toString(8).padStart(3, "0");
  const why = untrusted(info, "directory");
  if (why !== null && why.startsWith("belongs")) {
    return [{
      check,
      status: "fail",
      detail: `${root} ${why}: the tap refuses it (serve exits 2); point --mirror-dir / SESSIONTAP_MIRROR_DIR at a directory of your own`,
    }];
  }
  if (why !== null) {
    out.push({
      check,
      status: "fail",
      detail: `${root} ${why}: the tap refuses it (serve exits 2), since others could read or plant conversations; chmod 700 ${root}`,
    });
  } else if (io.fs.posixModes !== false && (info.mode & 0o077) !== 0) {
    out.push({ check, status: "warn", detail: `${root} is mode ${mode}: other users can read conversations; chmod 700 ${root}` });
  }
  out.push(...(await plantedEntries(io, root)));
  const probe = join(root, `.sessiontap-doctor-${crypto.randomUUID().slice(0, 8)}`);
  try {
    await io.fs.createExclusive(probe, "", false);
    await io.fs.unlink(probe);
  } catch (error) {
    out.push({
      check,
      status: "fail",
      detail: `${root} is not writable (${(error as { code?: string }).code ?? (error as Error).message}): the tap cannot mirror`,
    });
  }
  try {
    const { freeBytes } = await io.fs.statfs(root);
    const status = freeBytes < 100 * MIB ? "fail" : freeBytes < 1024 * MIB ? "warn" : "ok";
    out.push({ check: "free space", status, detail: `${bytesShort(freeBytes)} free for ${root}${status === "ok" ? "" : ": a full disk stops the mirror"}` });
  } catch (error) {
    out.push({ check: "free space", status: "warn", detail: `could not tell (${(error as { code?: string }).code ?? (error as Error).message})` });
  }
  if (!out.some((c) => c.check === check)) out.unshift({ check, status: "ok", detail: `${root} (mode ${mode}, writable)` });
  return out;
}

/**
 * The tap Claude Code would use (or the one `--url` / `--port` names), what its health says, and the way
 * Claude Code will really reach it.
 */
async function tapAndRoute(
  config: Readonly<Config>,
  io: CommandIo,
  settings: SettingsFile[],
): Promise<{ checks: Check[]; health: Record<string, unknown> | null }> {
  const out: Check[] = [];
  for (const s of settings) if (s.error !== null) out.push({ check: "claude settings", status: "warn", detail: `${s.path} could not be read: ${s.error}` });
  const route = claudeRoute(settings, io.env);
  const base = route.base;
  const host = config.host === "0.0.0.0" ? "127.0.0.1" : config.host === "::" ? "::1" : config.host;
  const defaultTap = `http://${host.includes(":") ? `[${host}]` : host}:${config.port}`;
  const [tapUrl, chosen] = config.url !== null
    ? [config.url.replace(/\/+$/, ""), "--url"]
    : config.sources.port === "flag"
    ? [`http://127.0.0.1:${config.port}`, "--port"]
    : base !== null && safeOrigin(base.value) !== null
    ? [safeOrigin(base.value)!, `${route.baseVar} ${base.where}`]
    : [defaultTap, "the default address"];
  const tap = await tapChecks(config, io, tapUrl, chosen);
  out.push(...tap.checks, ...(await routeChecks(route, settings, io, { url: tapUrl, probe: tap.tap }, config)));
  return { checks: out, health: tap.tap.ok ? tap.tap.health : null };
}
