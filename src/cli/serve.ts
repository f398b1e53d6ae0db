// `sessiontap serve` (docs/DESIGN.md "Command line"): a tap started once its root is checked, the startup block, a
// graceful stop on SIGINT/SIGTERM; the launcher starts and stops its own taps through the same two functions.
import { join } from "node:path/posix";
import { type Config, settingName } from "../config/parse.ts";
import { ProxyStartError } from "../config/proxy-settings.ts";
import { runtimeName } from "../runtime/index.ts";
import { type EntryInfo, type FsAdapter, nodeFs } from "../storage/fs-adapter.ts";
import { untrusted } from "../storage/trusted-path.ts";
import { redactUrl } from "../store/pg-client.ts";
import { PriceFileError } from "../usage/prices.ts";
import { describe, plural } from "../utils/describe-error.ts";
import { VERSION } from "../version.ts";
import { isLoopback } from "../viewer/hosts.ts";
import { type CommandIo, exitWith } from "./command-io.ts";
import { type RunningTap, startTap, type TapDeps } from "./start-tap.ts";
import { localAddress, type Probe, probeTap, proofKey, unproven, whichTap } from "./tap-probe.ts";

/** Why a tap did not start, in a line for after "sessiontap: "; `holder` is what answered on its port when that was why. */
export type Refusal = { line: string; holder: Probe["kind"] | null };

/** The root made (0700), this user's, private, and written to before a tap listens (docs/DESIGN.md "Health and exit"); null, or what is wrong. */
export async function prepareRoot(fs: FsAdapter, root: string): Promise<string | null> {
  let info;
  try {
    info = (await fs.lstat(root)) ?? (await fs.mkdir(root, 0o700), await fs.lstat(root));
  } catch (error) {
    return `it cannot be created (${describe(error)})`;
  }
  return info === null ? "it vanished while being created" : await rootProblem(fs, root, info);
}

/** Why a tap refuses the root `info` describes (a link, another user's, open to others, not writable), or null. */
export async function rootProblem(fs: FsAdapter, root: string, info: EntryInfo): Promise<string | null> {
  const why = untrusted(info, "directory");
  if (why === "is a symbolic link") return `${root} is a symbolic link; point the setting at the real directory`;
  if (why === "is not a directory") return `${root} exists and is not a directory`;
  if (why?.startsWith("belongs")) return `${root} ${why}; point the setting at a directory of your own`;
  if (why !== null) return `${root} ${why}, so other users could read or plant conversations; chmod 700 ${root}`;
  if (!(await fs.canReadWrite(root))) return `${root} is not readable and writable by this user`;
  const probe = join(root, `.sessiontap-probe-${crypto.randomUUID().slice(0, 8)}`);
  try {
    await fs.createExclusive(probe, "", false);
    await fs.unlink(probe);
  } catch (error) {
    return `nothing can be written there (${describe(error)})`;
  }
  return null;
}

/** A tap on `config`, or the one line why not, in our words, never the runtime's (docs/DESIGN.md "Never in the way"). */
export async function startOrRefuse(config: Readonly<Config>, io: CommandIo, stderr: TapDeps["stderr"], inThread = false): Promise<RunningTap | Refusal> {
  const fail = (line: string, holder: Refusal["holder"] = null) => ({ line, holder });
  if (config.mirror) {
    const problem = await prepareRoot(nodeFs, config.mirrorDir);
    if (problem !== null) return fail(`cannot mirror to ${config.mirrorDir} (set by ${settingName(config, "mirrorDir")}): ${problem}`);
  }
  try {
    return await startTap(config, { stderr, workerUrl: io.workerUrl, viewerWorkerUrl: io.viewerWorkerUrl, inThread });
  } catch (error) {
    const where = `${config.host}:${config.port}`;
    // Bun names a taken port only in its message.
    const given = (error as { code?: unknown } | null)?.code;
    const code = typeof given === "string" && given !== ""
      ? given
      : /Is port \d+ in use|address already in use/i.test(String((error as Error | null)?.message ?? error))
      ? "EADDRINUSE"
      : "";
    if (error instanceof PriceFileError || error instanceof ProxyStartError) return fail(`cannot start: ${error.message}`);
    if (code === "EACCES" || code === "EPERM") {
      return fail(`cannot listen on ${where}: permission denied (ports below 1024 need privileges); pick another with --port`);
    }
    if (code === "EADDRNOTAVAIL") return fail(`cannot listen on ${where}: ${config.host} is not an address of this machine (--host)`);
    if (code !== "EADDRINUSE") return fail(`cannot start: ${describe(error)}`);
    const url = `http://${localAddress(config.host)}:${config.port}`;
    const holder = await probeTap(io.fetch, url, await proofKey(config.mirror, config.mirrorDir), config.token, { timeoutMs: 1000 });
    const held = holder.kind === "mine"
      ? `a sessiontap is already running on ${where} (${whichTap(holder.health)}): use it (export ANTHROPIC_BASE_URL=${url}), or pick another port with --port`
      : holder.kind === "unproven"
      ? `port ${config.port} on ${config.host} is held by ${unproven(config)}; pick another port with --port (or SESSIONTAP_PORT)`
      : `port ${config.port} is in use on ${config.host}; pick another with --port (or SESSIONTAP_PORT)`;
    return fail(held, holder.kind);
  }
}

/** Stops a tap, saying what it could not write; false when something was lost. */
export async function stopTap(tap: RunningTap, config: Readonly<Config>, stderr: (text: string) => void, closed?: () => void): Promise<boolean> {
  let unwritten;
  try {
    unwritten = await tap.stop(closed);
  } catch (error) {
    stderr(`sessiontap: the mirror could not be stopped cleanly (${describe(error)}): answers it held in memory are not mirrored\n`);
    return false;
  }
  const commits = unwritten.kind === "none" ? "" : plural(unwritten.commits, "commit");
  if (unwritten.kind === "saved") {
    stderr(`sessiontap: ${commits} could not be written to ${config.mirrorDir}; saved in ${unwritten.path}: the next start on this mirror root writes them\n`);
  }
  if (unwritten.kind === "lost") {
    stderr(`sessiontap: ${commits} could not be written and could be saved nowhere (${unwritten.error}): those turns are not mirrored\n`);
  }
  return unwritten.kind !== "lost";
}

/** Runs the tap until SIGINT/SIGTERM: 0 after a graceful stop, 1 when commits could be saved nowhere, 2 when it cannot start. */
export async function runServe(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const tap = await startOrRefuse(config, io, (line) => io.stderr(line + "\n"));
  if (!("url" in tap)) return exitWith(io, 2, tap.line);
  const exposed = !isLoopback(config.host);
  if (exposed) {
    io.stderr(`sessiontap: WARNING: listening on ${config.host}, reachable from the network; /_tap/ (viewer, API, health details) requires the token\n`);
  }
  if (tap.proxy !== null && tap.proxy.ca.made !== null && tap.proxy.ca.made !== "made") {
    const dir = config.proxy!.caDir;
    io.stderr(
      `sessiontap: made a new proxy CA in ${dir} (the old one: ${tap.proxy.ca.made}); clients started with the old one must be restarted to trust it\n`,
    );
  }
  io.stdout(startupBlock(config, tap, exposed).join("\n"));
  const signal = await io.stopSignal;
  return (await stopTap(tap, config, io.stderr, () => io.stderr(`sessiontap: ${signal}, stopping\n`))) ? 0 : 1;
}

function startupBlock(config: Readonly<Config>, tap: RunningTap, exposed: boolean): string[] {
  const token = tap.token;
  const waiting = tap.replayed.waiting > 0 ? ` (${tap.replayed.waiting} still waiting: see /_tap/health)` : "";
  const storeLine = config.mirror && config.store !== null;
  const certPath = tap.proxy?.ca.certPath ?? "";
  const proxy = tap.proxy === null ? null : tap.url.replace(/\d+$/, String(tap.proxy.port));
  return [
    `sessiontap ${VERSION} (${runtimeName()})`,
    ...(exposed
      ? [
        `  WARNING    reachable from the network on ${config.host}: anyone who can reach this port can send API traffic through it (their own key pays);`,
        `             the viewer, its API and health details need the token below`,
      ]
      : []),
    `  listening  ${tap.url}`,
    ...(token === null ? [] : [
      token.generated
        ? `  token      ${token.value}  (generated for this run and printed only here; choose one with --token or SESSIONTAP_TOKEN)`
        : `  token      from ${config.tokenSource === "flag" ? "--token" : "SESSIONTAP_TOKEN"}`,
      `  login      ${tap.url}/_tap/login?token=${token.generated ? token.value : "<TOKEN>"}  (or send Authorization: Bearer <TOKEN>)`,
    ]),
    `  upstream   ${config.upstream}`,
    `  mirror     ${config.mirror ? config.mirrorDir : "off"}${storeLine && config.storeOnly ? " (outage spool only)" : ""}`,
    ...(storeLine ? [`  store      ${redactUrl(config.store!)}`] : []),
    ...(tap.replayed.commits === 0 ? [] : [`  replayed   ${plural(tap.replayed.commits, "commit")} an earlier run could not write${waiting}`]),
    `  guard      ${!tap.guarded ? "off" : `watching Claude Code's transcripts under ${config.claudeDir}/projects`}`,
    ...(proxy === null ? [] : [
      `  proxy      ${proxy}  (${tap.proxy!.summary})`,
      `  proxy CA   ${certPath}${tap.proxy!.ca.made === null ? "" : " (made now)"}  (trusted only by processes started with NODE_EXTRA_CA_CERTS)`,
    ]),
    `  viewer     ${tap.viewer}`,
    `  health     ${tap.url}/_tap/health`,
    ``,
    `  export ANTHROPIC_BASE_URL=${tap.url}`,
    ...(exposed && token !== null
      ? [`  export ANTHROPIC_CUSTOM_HEADERS="x-sessiontap-token: <TOKEN>"  (the token above: without it, API traffic is relayed, not mirrored)`]
      : []),
    ``,
    ...(proxy === null ? [] : [
      `  or, in proxy mode (no ANTHROPIC_BASE_URL):`,
      `  export HTTPS_PROXY=${proxy.replace("//", `//${token === null ? "" : `sessiontap:${token.generated ? token.value : "<TOKEN>"}@`}`)}`,
      `  export NODE_EXTRA_CA_CERTS=${/^[A-Za-z0-9_./:@%+=-]+$/.test(certPath) ? certPath : `'${certPath.replace(/'/g, "'\\''")}'`}`,
      ``,
    ]),
  ];
}
