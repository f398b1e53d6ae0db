// `sessiontap doctor`: what makes a user lose a transcript or bypass the tap, each ok / warn / FAIL with what to do; exit 1 on a
// failure (docs/DESIGN.md "Providers").
import { join } from "node:path/posix";
import type { Config } from "../config/parse.ts";
import { hostTable } from "../config/proxy-settings.ts";
import { isAwsHost } from "../protocol/headers.ts";
import { isObject } from "../protocol/json.ts";
import { LAST_DRILL, lastDrill as readLastDrill, SessionCatalog } from "../storage/mirror-reader.ts";
import { untrusted } from "../storage/trusted-path.ts";
import { scrubLine } from "../transcript/records.ts";
import { lackingWords } from "../transcript/transcript-state.ts";
import { bytesShort } from "../usage/tokens.ts";
import { describe, plural } from "../utils/describe-error.ts";
import { localDateTime } from "../utils/local-time.ts";
import { isLoopback } from "../viewer/hosts.ts";
import { type CommandIo, printJson } from "./command-io.ts";
import { rootProblem } from "./serve.ts";
import { boundedText, localAddress, probeTap, proofKey, tokenLeftFor } from "./tap-probe.ts";

const MIB = 1024 * 1024;
/** Claude Code's default cleanup; sessions younger than this count as recent. */
const RECENT_DAYS = 30;
/** From here on a `cleanupPeriodDays` has been seen ignored. */
const VERY_LARGE_DAYS = 10_000;

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const settings = await settingsFiles(config, io);
  const tap = await tapAndRoute(config, io, settings);
  const checks = [
    ...(await mirrorRoot(config, io)),
    ...tap.checks,
    ...retention(config, settings),
    ...(await transcriptChecks(config, io, alertedSessions(tap.health))),
    ...(await lastDrill(config, io)),
  ];
  const fails = checks.filter((c) => c.status === "fail").length;
  const warns = checks.filter((c) => c.status === "warn").length;
  if (config.json) printJson(io, checks);
  else {
    const width = Math.max(...checks.map((c) => c.check.length));
    const lines = checks.map((c) => `${c.status === "fail" ? "FAIL" : c.status.padEnd(4)}  ${c.check.padEnd(width)}  ${c.detail}`);
    lines.push("", fails === 0 && warns === 0 ? "All checks passed." : `${plural(fails, "problem")}, ${plural(warns, "warning")}.`);
    io.stdout(lines.join("\n") + "\n");
  }
  return fails > 0 ? 1 : 0;
}

async function mirrorRoot(config: Readonly<Config>, io: CommandIo): Promise<Check[]> {
  const root = config.mirrorDir;
  const info = await io.fs.lstat(root);
  if (info === null) return [verdict("mirror root", "warn", `${root} does not exist yet (the tap creates it, 0700, on its first write)`)];
  const problem = await rootProblem(io.fs, root, info);
  const refused = verdict("mirror root", "fail", `the tap refuses it (serve exits 2): ${problem}`);
  // A root open to others is still looked through: what was planted in it is said too.
  if (problem !== null && (info.isSymbolicLink || !info.isDirectory || problem.includes(" belongs to "))) return [refused];
  const mode = (info.mode & 0o777).toString(8).padStart(3, "0");
  const out = [
    problem !== null
      ? refused
      : io.fs.posixModes !== false && (info.mode & 0o077) !== 0
      ? verdict("mirror root", "warn", `${root} is mode ${mode}: other users can read conversations; chmod 700 ${root}`)
      : verdict("mirror root", "ok", `${root} (mode ${mode}, writable)`),
    ...(await plantedEntries(io, root)),
  ];
  try {
    const { freeBytes } = await io.fs.statfs(root);
    const status = freeBytes < 100 * MIB ? "fail" : freeBytes < 1024 * MIB ? "warn" : "ok";
    out.push(verdict("free space", status, `${bytesShort(freeBytes)} free for ${root}${status === "ok" ? "" : ": a full disk stops the mirror"}`));
  } catch (error) {
    out.push(verdict("free space", "warn", `could not tell (${describe(error)})`));
  }
  return out;
}

/** What the tap would refuse at write time in the tree's first two levels: another user's, open to others, or a link. */
async function plantedEntries(io: CommandIo, root: string): Promise<Check[]> {
  const found: string[] = [];
  const look = async (path: string, depth: number): Promise<void> => {
    for (const entry of await io.fs.readdir(path)) {
      const child = join(path, entry.name);
      const info = found.length >= 5 ? null : await io.fs.lstat(child);
      const why = info === null ? null : untrusted(info, info.isDirectory ? "directory" : "file");
      if (why !== null) found.push(`${child} ${why}`);
      else if (info?.isDirectory && depth < 1) await look(child, depth + 1);
    }
  };
  try {
    await look(root, 0);
  } catch (error) {
    return [verdict("mirror tree", "warn", `could not look through ${root} (${describe(error)})`)];
  }
  if (found.length === 0) return [];
  const what = found.join("; ") + (found.length >= 5 ? "; …" : "");
  const why = `the tap refuses to write into ${what}: the mirror did not put them there — look at them, then remove them (or chmod go-w what is yours)`;
  return [verdict("mirror tree", "fail", why)];
}

/** A mirror deleting no later than Claude Code's cleanup keeps no copy past it. */
function retention(config: Readonly<Config>, settings: SettingsFile[]): Check[] {
  const found = settings.find((s) => s.json?.cleanupPeriodDays !== undefined);
  const days = found?.json?.cleanupPeriodDays;
  const keep = config.retentionDays;
  const kept = keep === 0 ? " (the default), it keeps every session" : `, it keeps sessions ${keep} days (set it higher, or 0 to keep them all)`;
  const net = `The mirror is the safety net: SESSIONTAP_RETENTION_DAYS=${keep}${kept}`;
  const usable = typeof days === "number" && Number.isInteger(days) && days >= 1;
  const file = join(config.claudeDir, "settings.json");
  const cleanup = verdict(
    "cleanupPeriodDays",
    found !== undefined && usable && days >= RECENT_DAYS && days < VERY_LARGE_DAYS ? "ok" : "warn",
    found === undefined
      ? `not set: Claude Code deletes transcripts older than 30 days when it starts; to keep them, set "cleanupPeriodDays": 3650 in ${file}. ${net}`
      : !usable
      ? `${JSON.stringify(days)} in ${found.path} is not a whole number of days ≥ 1; Claude Code rejects it`
      : days < RECENT_DAYS
      ? `${days} (${found.path}): Claude Code deletes transcripts older than ${days} days when it starts. ${net}`
      : days >= VERY_LARGE_DAYS
      ? `${days} (${found.path}): Claude Code has been seen to ignore very large values and delete transcripts after 30 days anyway; 3650 keeps them ten years. ${net}`
      : `${days} days (${found.path})`,
  );
  const after = usable && days < VERY_LARGE_DAYS ? days : 30;
  const mirror = verdict(
    "mirror retention",
    keep !== 0 && keep <= after ? "warn" : "ok",
    keep === 0
      ? "off (the default): the mirror keeps every session, those Claude Code's cleanup deleted included (list shows them missing; sessiontap restore ID brings one back)"
      : keep <= after
      ? `SESSIONTAP_RETENTION_DAYS=${keep}: the mirror deletes a session after ${keep} days, no later than Claude Code's cleanup deletes its transcript (${after} days), so no copy outlives it; unset it to keep every session, or set it well past ${after}`
      : `SESSIONTAP_RETENTION_DAYS=${keep}: the mirror keeps sessions ${keep} days, past Claude Code's cleanup (${after})`,
  );
  return [cleanup, mirror];
}

/** Recent sessions whose transcript is missing, a stub, behind or torn; one the guard `alerted` of is said there. */
async function transcriptChecks(config: Readonly<Config>, io: CommandIo, alerted: ReadonlySet<string>): Promise<Check[]> {
  const since = io.clock() - RECENT_DAYS * 86_400_000;
  const judged = await new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir, undefined, undefined, io.clock).judged();
  const sessions = judged.filter(({ entry: s }) =>
    s.sessionId !== null && Date.parse(s.lastTimestamp ?? "") >= since && s.counts.prompts + s.counts.answers > 0 && !alerted.has(s.sessionId)
  );
  const out: Check[] = [];
  const say = (status: Check["status"], detail: string) => out.push(verdict("transcripts", status, detail));
  const odd = sessions.filter((s) => s.entry.claudeTranscriptProblem !== null);
  if (odd.length > 0) {
    const ids = plural(odd.length, "mirrored session has an id", "mirrored sessions have ids");
    say("warn", `${ids} Claude Code could not have made (${odd[0].entry.dir}…): readable with show/export, not restorable`);
  }
  for (const { entry: s } of sessions.filter((x) => x.entry.claudeTranscriptWarning !== null).slice(0, 20)) {
    const what = scrubLine(s.claudeTranscriptWarning!);
    say("warn", `${s.sessionId}: ${what} — where Claude Code keeps its transcript; move it away, then: sessiontap restore ${s.sessionId}`);
  }
  const plain = sessions.filter((x) => x.entry.claudeTranscriptProblem === null && x.entry.claudeTranscriptWarning === null);
  for (const { entry: s, info } of plain.filter((x) => x.info.state !== "intact").slice(0, 20)) {
    const where = `${s.sessionId} (${s.lastTimestamp}, ${s.cwd === null ? "cwd unknown" : scrubLine(s.cwd)}): Claude Code's transcript`;
    const restore = `sessiontap restore ${s.sessionId}${s.cwd === null ? " --cwd DIR (the directory you run claude in)" : ""}`;
    if (info.state === "behind") {
      const lacks = `it lacks ${lackingWords(info.verdict.lacking)} of the session's current branch (cut, or deleted and started afresh)`;
      say("fail", `${where} is behind the mirror: ${lacks}; quit Claude Code, then: ${restore} (a backup is kept)`);
    } else say(info.state === "stub" ? "fail" : "warn", `${where} is ${info.state === "stub" ? "a stub" : "missing"}; restore it: ${restore}`);
  }
  for (const { entry: s, info } of plain.filter((x) => x.info.state === "intact").slice(0, 20)) {
    const force = `sessiontap restore ${s.sessionId} --force`;
    if (info.verdict.lacking.prompts + info.verdict.lacking.answers > 0) {
      const extra = plural(info.verdict.extra, "prompt or answer", "prompts or answers");
      const differs = `lacks ${lackingWords(info.verdict.lacking)} of the mirror's current branch but holds ${extra} the mirror does not`;
      say("warn", `${s.claudeTranscriptPath} ${differs}: compare with sessiontap show ${s.sessionId}; ${force} replaces it (a backup is kept)`);
    } else if (info.facts?.torn) {
      const torn = "ends in a torn line (a record cut off mid-write; the next one Claude Code appends is lost with it)";
      say("warn", `${s.claudeTranscriptPath} ${torn}; quit Claude Code, then: ${force} (a backup is kept)`);
    }
  }
  if (out.length === (odd.length > 0 ? 1 : 0)) {
    say("ok", `Claude Code's transcript is whole for all ${plural(sessions.length - odd.length, "session")} mirrored in the last ${RECENT_DAYS} days`);
  }
  return out;
}

/** One line of doctor: what was checked, its verdict (a failure makes doctor exit 1) and what to do. */
type Check = { check: string; status: "ok" | "warn" | "fail"; detail: string };
const verdict = (check: string, status: Check["status"], detail: string): Check => ({ check, status, detail });

async function lastDrill(config: Readonly<Config>, io: CommandIo): Promise<Check[]> {
  const last = await readLastDrill(io.fs, config.mirrorDir).catch((error) => ({ unread: describe(error) }));
  if (last === null) return [];
  if ("unread" in last) {
    return [verdict("last drill", "warn", `${join(config.mirrorDir, LAST_DRILL)} could not be read (${last.unread}): run sessiontap drill again`)];
  }
  const by = last.claudeCode !== null ? ` by Claude Code ${last.claudeCode}` : "";
  const of = `${last.passed} of ${plural(last.drilled, "session")}${last.named ? " named" : ""} resumed whole${by}`;
  const fix = last.passed === last.drilled ? "" : ": sessiontap drill names what failed (docs/recovery.md)";
  return [verdict("last drill", last.passed === last.drilled ? "ok" : "warn", `${localDateTime(Date.parse(last.at), io.zone)}: ${of}${fix}`)];
}

type SettingsFile = { path: string; json: Record<string, unknown> | null; error: string | null };
/** `where`: "in the environment" or "in FILE (env)". */
type Setting = { value: string; where: string; fromSettings: string | null };
/** A tap's health, or why none answered (`down`: nothing does, so requests sent there fail). */
type TapLook = { ok: true; health: Record<string, unknown>; proven: boolean } | { ok: false; why: string; down: boolean };
type Route = { provider: "anthropic" | "vertex" | "bedrock"; who: string; baseVar: string; base: Setting | null; host: string };

const BASE_VARS = { anthropic: "ANTHROPIC_BASE_URL", vertex: "ANTHROPIC_VERTEX_BASE_URL", bedrock: "ANTHROPIC_BEDROCK_BASE_URL" } as const;
const NAMES = { anthropic: "the Anthropic API", vertex: "Google Vertex AI", bedrock: "AWS Bedrock" } as const;

/** Claude Code's settings files that exist, most specific first: the project's local and shared ones, then the config dir's. */
async function settingsFiles(config: Readonly<Config>, io: CommandIo): Promise<SettingsFile[]> {
  const project = config.cwd ?? io.cwd;
  const out = [];
  for (const path of new Set([join(project, ".claude/settings.local.json"), join(project, ".claude/settings.json"), join(config.claudeDir, "settings.json")])) {
    if ((await io.fs.lstat(path)) === null) continue;
    try {
      const json = JSON.parse(await io.fs.readText(path)) as unknown;
      out.push({ path, json: isObject(json) ? json : null, error: isObject(json) ? null : "not a JSON object" });
    } catch (error) {
      out.push({ path, json: null, error: (error as Error).message.split("\n")[0] });
    }
  }
  return out;
}

/** `name` as Claude Code will see it (its settings' `env` win over the environment), or null when unset or empty. */
function claudeSetting(settings: SettingsFile[], env: CommandIo["env"], ...names: string[]): Setting | null {
  for (const name of names) {
    for (const s of settings) {
      const value = isObject(s.json?.env) ? s.json.env[name] : undefined;
      if (typeof value === "string") return { value, where: `in ${s.path} (env)`, fromSettings: s.path };
    }
    if (env[name]) return { value: env[name]!, where: "in the environment", fromSettings: null };
  }
  return null;
}

const isTruthy = (setting: Setting | null) => setting !== null && ["1", "true", "yes", "on"].includes(setting.value.trim().toLowerCase());

/** What Claude Code does when `name` leads to nothing (measured with 2.1.328 and 2.1.332), and how to go around the tap. */
function requestsFail(name: string, fromSettings: string | null, start: string): string {
  const bypass = fromSettings === null ? `unset ${name}` : `remove ${name} from "env" in ${fromSettings}`;
  return 'Claude Code\'s requests fail: it retries for about 3 minutes (interactive: "Connection refused … retrying"; ' +
    `claude -p: silent), then stops with "API Error: Connection refused". Start the tap (${start}), or go around it: ${bypass}`;
}

const safeOrigin = (url: string) => (URL.canParse(url) ? new URL(url).origin : null);

/** The tap Claude Code would use (or the one `--url` / `--port` names), and the way Claude Code will reach it. */
async function tapAndRoute(config: Readonly<Config>, io: CommandIo, settings: SettingsFile[]) {
  const out = settings.filter((s) => s.error !== null).map((s) => verdict("claude settings", "warn", `${s.path} could not be read: ${s.error}`));
  const route = claudeRoute(settings, io.env);
  const base = route.base === null ? null : safeOrigin(route.base.value);
  const [tapUrl, chosen] = config.url !== null
    ? [config.url.replace(/\/+$/, ""), "--url"]
    : config.sources.port === "flag"
    ? [`http://127.0.0.1:${config.port}`, "--port"]
    : base !== null
    ? [base, `${route.baseVar} ${route.base!.where}`]
    : [`http://${localAddress(config.host)}:${config.port}`, "the default address"];
  const tap = await lookAt(io, tapUrl, config);
  if (!tap.ok) {
    const name = chosen === "--port" || chosen === "--url" ? "" : ", or name it: sessiontap doctor --url URL";
    out.push(verdict("tap", "fail", `${tap.why} (${chosen}); start it: sessiontap serve${name}`));
  } else {
    const about = `${tapUrl} (${chosen})`;
    const root = otherRoot(tap.health, config);
    out.push(
      root === "off"
        ? verdict("tap", "warn", `${about} is up, but runs with the mirror off (--no-mirror / SESSIONTAP_MIRROR=off)`)
        : root !== null
        ? verdict("tap", "warn", `${about} is up, mirroring to ${root}; this doctor looked at ${config.mirrorDir} (pass --mirror-dir)`)
        : verdict("tap", "ok", `${about} is up (sessiontap ${String(tap.health.version)}, ${String(tap.health.runtime)})`),
      ...healthChecks(tap.health),
    );
  }
  out.push(...(await routeChecks(route, settings, io, { url: tapUrl, look: tap }, config)));
  return { checks: out, health: tap.ok ? tap.health : null };
}

/** Another root than doctor's, or "off": a tap of this user's that cannot prove itself, and says so of itself. */
function otherRoot(health: Record<string, unknown> | null, config: Readonly<Config>): string | null {
  const mirror = health?.mirror;
  return mirror === "off" ? "off" : isObject(mirror) && typeof mirror.root === "string" && mirror.root !== config.mirrorDir ? mirror.root : null;
}

async function lookAt(io: CommandIo, base: string, config: Readonly<Config>): Promise<TapLook> {
  const token = config.token ?? await tokenLeftFor(io.fs, config.mirrorDir, base);
  const found = await probeTap(io.fetch, base, await proofKey(true, config.mirrorDir), token);
  if (found.kind === "none") return { ok: false, down: true, why: `nothing answers at ${found.url} (${found.why})` };
  if (found.kind === "other") return { ok: false, down: false, why: `${found.url} answers, but is not a sessiontap tap (HTTP ${found.httpStatus})` };
  if (found.health !== null && (found.kind === "mine" || otherRoot(found.health, config) !== null)) {
    return { ok: true, health: found.health, proven: found.kind === "mine" };
  }
  const host = new URL(found.url).hostname;
  const suspect = /^(\[.*\]|[\d.]+)$/.test(host) ? "another user's server on the port?" : `a tap proves itself for its address: name that, not ${host}`;
  const needs = config.token === null ? "set SESSIONTAP_TOKEN" : "SESSIONTAP_TOKEN is not that token";
  const why = found.kind === "unproven"
    ? `answers as a sessiontap, but could not prove it is this user's tap mirroring to ${config.mirrorDir} (${suspect}); doctor sent it no token`
    : `answers ${found.status}, but shows its details only with its token (${needs})`;
  return { ok: false, down: false, why: `${found.url} ${why}` };
}

/** The tap's own word in its health: its guard, what it forwarded unmirrored, and each problem ("upstream: …" as check "tap upstream"). */
function healthChecks(health: Record<string, unknown>): Check[] {
  const out: Check[] = [];
  const guard = health.guard;
  const watched = isObject(guard) && alertedSessions(health).size === 0;
  const off = "off in the tap (SESSIONTAP_GUARD=off, or no Claude Code config dir where it runs): a lost transcript is only found when doctor runs";
  if (guard === "off") out.push(verdict("guard", "warn", `${off}; SESSIONTAP_GUARD=on turns it on`));
  else if (watched && Number(guard.notFound ?? 0) > 0) {
    const where = "does it look in the config dir Claude Code uses (serve --claude-dir / CLAUDE_CONFIG_DIR)?";
    out.push(verdict("guard", "warn", `the tap has not found Claude Code's transcript of ${plural(Number(guard.notFound), "session")} it mirrors: ${where}`));
  } else if (watched) out.push(verdict("guard", "ok", `watching ${plural(Number(guard.watching ?? 0), "active session")}, no alert`));
  const report = isObject(health.mirror) ? health.mirror.notMirrored : undefined;
  const shapes = isObject(report) && Array.isArray(report.shapes)
    ? report.shapes.flatMap((s) => (isObject(s) && typeof s.said === "string" ? [s.said] : []))
    : [];
  for (const said of shapes.slice(0, 5)) out.push(verdict("not mirrored", "warn", `${said}: these conversations are not in the mirror (docs/providers.md)`));
  if (shapes.length > 5) out.push(verdict("not mirrored", "warn", `and ${shapes.length - 5} more path shapes: see /_tap/health`));
  const problems = Array.isArray(health.problems) ? health.problems.filter((p): p is string => typeof p === "string") : [];
  if (health.status === "degraded" && problems.length === 0) out.push(verdict("tap health", "fail", "degraded (no problem named)"));
  for (const p of problems) {
    const colon = p.indexOf(": ");
    out.push(colon > 0 && colon < 20 ? verdict(`tap ${p.slice(0, colon)}`, "fail", p.slice(colon + 2)) : verdict("tap health", "fail", p));
  }
  return out;
}

function alertedSessions(health: Record<string, unknown> | null): Set<string> {
  const guard = health?.guard;
  if (!isObject(guard) || !Array.isArray(guard.alerts)) return new Set();
  return new Set(guard.alerts.flatMap((a) => (isObject(a) && typeof a.sessionId === "string" ? [a.sessionId] : [])));
}

/** The API Claude Code talks to, as its settings and environment choose it: Bedrock wins over Vertex, as in Claude Code. */
function claudeRoute(settings: SettingsFile[], env: CommandIo["env"]): Route {
  const get = (...names: string[]) => claudeSetting(settings, env, ...names);
  const bedrock = get("CLAUDE_CODE_USE_BEDROCK");
  const vertex = get("CLAUDE_CODE_USE_VERTEX");
  const provider = isTruthy(bedrock) ? "bedrock" : isTruthy(vertex) ? "vertex" : "anthropic";
  const on = provider === "bedrock" ? bedrock : provider === "vertex" ? vertex : null;
  const region = provider === "bedrock" ? get("AWS_REGION", "AWS_DEFAULT_REGION")?.value ?? "us-east-1" : get("CLOUD_ML_REGION")?.value ?? "us-east5";
  const host = provider === "bedrock"
    ? `bedrock-runtime.${region}.amazonaws.com`
    : provider === "vertex"
    ? region === "global" ? "aiplatform.googleapis.com" : `${region}-aiplatform.googleapis.com`
    : "api.anthropic.com";
  const who = `Claude Code on ${NAMES[provider]}${on === null ? "" : ` (CLAUDE_CODE_USE_${provider.toUpperCase()} ${on.where})`}`;
  return { provider, who, baseVar: BASE_VARS[provider], base: get(BASE_VARS[provider]), host };
}

async function routeChecks(route: Route, settings: SettingsFile[], io: CommandIo, tap: { url: string; look: TapLook }, config: Readonly<Config>) {
  const out: Check[] = [];
  for (const provider of ["vertex", "bedrock"] as const) {
    const unused = provider === route.provider ? null : claudeSetting(settings, io.env, BASE_VARS[provider]);
    if (unused !== null) {
      const detail = `set ${unused.where}, but Claude Code is not on ${NAMES[provider]} (CLAUDE_CODE_USE_${provider.toUpperCase()}=1): it ignores it`;
      out.push(verdict(BASE_VARS[provider], "warn", detail));
    }
  }
  const { baseVar: check, base } = route;
  if (base === null) {
    const proxy = claudeSetting(settings, io.env, "HTTPS_PROXY", "https_proxy");
    if (proxy !== null) return [...out, ...(await proxyChecks(route, proxy, settings, io, tap))];
    const suggest = `${tap.url}${route.provider === "vertex" ? "/v1" : ""}`;
    const proxyMode =
      'the tap\'s proxy mode: sessiontap serve --proxy-port N prints the HTTPS_PROXY and NODE_EXTRA_CA_CERTS lines to export (docs/providers.md, "Proxy mode")';
    const fix = route.provider === "bedrock"
      ? `use ${proxyMode}, where your AWS signature stays valid, or export ${check}=${suggest} with a Bedrock API key (docs/providers.md, "AWS Bedrock")`
      : `export ${check}=${suggest} (or set it under "env" in ${join(config.claudeDir, "settings.json")}), or use ${proxyMode}`;
    out.push(verdict(check, "fail", `not set, nor is HTTPS_PROXY, so ${route.who} talks to ${route.host} directly and nothing is mirrored: ${fix}`));
    return out;
  }
  const fromEnv = io.env[check];
  if (base.fromSettings !== null && fromEnv && fromEnv !== base.value) {
    out.push(verdict(check, "warn", `the environment says ${fromEnv}, but Claude Code applies ${base.value} from ${base.fromSettings} over it`));
  }
  const target = new URL(tap.url).origin === safeOrigin(base.value) ? tap.look : await lookAt(io, base.value, config);
  const detail = !target.ok && target.down
    ? `${base.value} ${base.where}: ${target.why}. ${requestsFail(check, base.fromSettings, "sessiontap serve, or run sessiontap claude")}`
    : !target.ok
    ? `${base.value} ${base.where}: ${target.why}; Claude Code's requests go there and are not mirrored`
    : `${base.value} ${base.where} reaches a tap${target.proven ? "" : " that could not prove it is yours"}: ${route.who} goes through it (base-URL mode)`;
  out.push(verdict(check, !target.ok ? "fail" : target.proven ? "ok" : "warn", detail));
  if (target.ok && route.provider === "bedrock") out.push(...bedrockCredentials(settings, io.env, target.health));
  return out;
}

/** Base-URL mode forwards a Bedrock API key, or no credentials to an upstream that signs; it refuses the rest (docs/DESIGN.md "Bedrock's signatures"). */
function bedrockCredentials(settings: SettingsFile[], env: CommandIo["env"], health: Record<string, unknown>): Check[] {
  if (claudeSetting(settings, env, "AWS_BEARER_TOKEN_BEDROCK") !== null) return [];
  const instead =
    'run the tap in proxy mode instead, where the signature stays valid (docs/providers.md, "AWS Bedrock"), or use a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)';
  const signed = `Claude Code signs each request with your AWS keys for the tap's address, which the tap refuses: ${instead}`;
  if (!isTruthy(claudeSetting(settings, env, "CLAUDE_CODE_SKIP_BEDROCK_AUTH"))) return [verdict("Bedrock credentials", "fail", signed)];
  const upstream = isObject(health.upstream) && typeof health.upstream.url === "string" ? safeOrigin(health.upstream.url) : null;
  const host = upstream?.replace(/^\w+:\/\//, "") ?? null;
  if (host === null || !isAwsHost(host)) return [];
  const unsigned = `CLAUDE_CODE_SKIP_BEDROCK_AUTH sends no credentials, and the tap's upstream ${host} is AWS, which refuses such requests`;
  return [verdict("Bedrock credentials", "fail", `${unsigned}: point --upstream at a gateway of yours that signs, or ${instead}`)];
}

/** HTTPS_PROXY must be the proxy of the tap doctor looked at, NO_PROXY must not send the host around it, and its CA must be trusted. */
async function proxyChecks(route: Route, proxy: Setting, settings: SettingsFile[], io: CommandIo, tap: { url: string; look: TapLook }): Promise<Check[]> {
  const check = "HTTPS_PROXY";
  const about = `${proxy.value} ${proxy.where}`;
  const text = /^\w+:\/\//.test(proxy.value) ? proxy.value : `http://${proxy.value}`;
  if (!URL.canParse(text)) return [verdict(check, "fail", `${about} is not a URL`)];
  const url = new URL(text);
  const noProxy = claudeSetting(settings, io.env, "NO_PROXY", "no_proxy");
  const bypassed = noProxy?.value.split(/[\s,]+/).filter(Boolean).some((entry) => {
    const name = entry.replace(/:\d+$/, "").replace(/^\*?\./, "").toLowerCase();
    return entry === "*" || route.host === name || route.host.endsWith(`.${name}`);
  });
  const around = `${noProxy?.value} ${noProxy?.where} sends ${route.host} around the proxy`;
  if (bypassed) return [verdict("NO_PROXY", "fail", `${around}: ${route.who} talks to it directly and nothing is mirrored`)];
  const health = tap.look.ok && isObject(tap.look.health.proxy) ? tap.look.health.proxy : null;
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const tapHost = new URL(tap.url).hostname;
  const atTap = url.hostname === tapHost || (isLoopback(url.hostname) && isLoopback(tapHost));
  let first: Check;
  if (health !== null && health.port === port && atTap) {
    const sentTo = isObject(health.routes) ? health.routes[route.host] : undefined;
    const elsewhere = typeof sentTo === "string" ? ` and sends to ${sentTo} (SESSIONTAP_PROXY_UPSTREAM), not to ${route.host} itself` : "";
    const blind = `${route.host}, where ${route.who} goes, is not a host its CA covers: a blind tunnel, never mirrored`;
    first = hostTable().terminates(route.host)
      ? verdict(check, "ok", `${about} is the tap's proxy: ${route.who} goes through it to ${route.host}, which it mirrors${elsewhere} (proxy mode)`)
      : verdict(check, "fail", `${about} is the tap's proxy, but ${blind}`);
  } else if (tap.look.ok && health === null && atTap) {
    first = verdict(check, "fail", `${about}, but the tap at ${tap.url} runs no proxy: start it with --proxy-port ${port} (SESSIONTAP_PROXY_PORT)`);
  } else {
    const what = await proxyAt(io, url);
    first = what === "sessiontap"
      ? verdict(check, "warn", `${about} is a sessiontap proxy, but not that of the tap at ${tap.url}: name its tap: sessiontap doctor --url URL`)
      : what.startsWith("nothing answers")
      ? verdict(check, "fail", `${about}: ${what}. ${requestsFail(check, proxy.fromSettings, `sessiontap serve --proxy-port ${port}`)}`)
      : verdict(check, "fail", `${about} is not the tap's proxy (${what}): ${route.who} goes through it, and nothing is mirrored`);
  }
  return [first, await extraCaCheck(settings, io, health !== null && typeof health.ca === "string" ? health.ca : null, first.status === "ok")];
}

/** "sessiontap" (a tap's proxy refuses a GET in its own words), or what else answers. */
async function proxyAt(io: CommandIo, url: URL): Promise<string> {
  try {
    const response = await io.fetch(new URL("/", url.origin), { signal: AbortSignal.timeout(2000), redirect: "manual" });
    const text = (await boundedText(response, 64 * 1024).catch(() => null)) ?? "";
    return response.status === 405 && text.includes("the tap's forward proxy") ? "sessiontap" : `something else answers there (HTTP ${response.status})`;
  } catch (error) {
    return `nothing answers at ${url.host} (${(error as Error).name === "TimeoutError" ? "timed out" : describe(error)})`;
  }
}

async function extraCaCheck(settings: SettingsFile[], io: CommandIo, ca: string | null, ours: boolean): Promise<Check> {
  const check = "NODE_EXTRA_CA_CERTS";
  const named = claudeSetting(settings, io.env, check);
  const fix = ca === null ? "" : `: export NODE_EXTRA_CA_CERTS=${ca}`;
  if (named === null) return verdict(check, "fail", `not set, so Claude Code refuses the proxy's certificates${fix}`);
  const about = `${named.value} ${named.where}`;
  if (ca === null || !ours) return verdict(check, "ok", about);
  if (named.value === ca) return verdict(check, "ok", `${about} is the tap's CA`);
  const [theirs, mine] = await Promise.all([io.fs.readText(named.value).catch(() => null), io.fs.readText(ca).catch(() => null)]);
  if (theirs !== null && mine !== null && theirs.includes(mine.trim())) return verdict(check, "ok", `${about} holds the tap's CA`);
  return verdict(check, "fail", `${about} ${theirs === null ? "cannot be read" : "does not hold the tap's CA"}, so Claude Code refuses its certificates${fix}`);
}
