/**
 * `sessiontap serve`: wires the mirror (tap), the app (server) and the runtime adapter, prints the startup
 * block, and stops gracefully on SIGINT/SIGTERM (docs/DESIGN.md "Command line"). `startTap` is the same
 * wiring for tests, with the filesystem, fetch and clock injectable.
 */
import { settingName, type Config } from "../config/parse.ts";
import { listen, runtimeName, upstreamFetch } from "../runtime/index.ts";
import { createApp } from "../server/app.ts";
import { generateToken } from "../server/request-guard.ts";
import { describe, describeBare } from "../storage/events-log.ts";
import { nodeFs, type FsAdapter } from "../storage/fs-adapter.ts";
import type { SpoolPlace } from "../storage/mirror-spool.ts";
import { Guard, type GuardOptions } from "../guard/guard.ts";
import { forward } from "../tap/forward.ts";
import { healthReport } from "../tap/health.ts";
import { Mirror, type Replayed, type Unwritten } from "../tap/mirror.ts";
import { UpstreamHealth } from "../tap/upstream-health.ts";
import { redactUrl } from "../store/pg-client.ts";
import { PgSink } from "../store/pg-sink.ts";
import { VERSION } from "../version.ts";
import { allowedHosts, createViewer, isLoopback } from "../viewer/index.ts";
import { LiveWatcher, observeWrites } from "../viewer/live.ts";
import { loadPrices } from "../storage/price-file.ts";
import { PriceFileError } from "../usage/prices.ts";
import { prepareRoot } from "./root-check.ts";

/** Seams a test may replace. */
export interface TapDeps {
  fs?: FsAdapter;
  fetch?: typeof fetch;
  clock?: () => number;
  stderr?: (line: string) => void;
  /** Where unwritten commits go when the root refuses them (default: under the system temp dir). */
  tempSpool?: SpoolPlace;
  /** The guard's timings and limits (defaults in src/guard/guard.ts). */
  guard?: Partial<Pick<GuardOptions, "settleMs" | "confirmMs" | "sweepMs" | "maxLooksPerMinute" | "maxBytesPerLook" | "tailBytes">>;
}

/** A tap that is listening. */
export interface RunningTap {
  url: string;
  port: number;
  mirror: Mirror | null;
  /** The guard of Claude Code's transcripts, or null when it is off. */
  guard: Guard | null;
  /** What the start replayed from the spools of earlier runs. */
  replayed: Replayed;
  /** The token `/_tap/` requires (null: none, loopback only); `generated` when this start made it up. */
  token: { value: string; generated: boolean } | null;
  /** Stops accepting, drains in-flight responses (bounded), flushes the mirror, saves what it could not write. */
  stop(): Promise<Unwritten>;
}

/** Starts a tap on `config` (in this process). */
export async function startTap(config: Readonly<Config>, deps: TapDeps = {}): Promise<RunningTap> {
  const clock = deps.clock ?? Date.now;
  const stderr = deps.stderr ?? ((line: string) => console.error(line));
  const baseFs = deps.fs ?? nodeFs;
  // A price file that cannot be used stops the start, as a bad setting does (runServe says why).
  const prices = await loadPrices(baseFs, config.prices);
  const viewerError = (error: unknown) => stderr(`sessiontap: viewer: ${describe(error)}`);
  // Built in the order they depend on each other: the watcher of new records first, so that every mirror
  // write can hint it (new records show at once); the mirror; what it feeds; then the viewer over them all.
  const watcher = new LiveWatcher(baseFs, config.mirrorDir, 2000, viewerError);
  const fs = observeWrites(baseFs, watcher);
  const mirror = config.mirror
    ? new Mirror({
        fs, root: config.mirrorDir, maxBytes: config.maxBytes, retentionDays: config.retentionDays,
        maxSessions: config.maxSessions, includeThinking: config.includeThinking, sideRequests: config.sideRequests,
        version: VERSION, clock, stderr, lockWaitMs: config.lockWaitMs, maxQueued: config.maxQueued,
        files: !(config.store !== null && config.storeOnly), tempSpool: deps.tempSpool,
      })
    : null;
  // The shared store: every commit also goes there; with SESSIONTAP_STORE_ONLY only there.
  const store = mirror !== null && config.store !== null
    ? new PgSink({
        url: config.store, fs: baseFs, root: config.mirrorDir, includeThinking: config.includeThinking, maxSessions: config.maxSessions,
        log: (action, fields) => mirror.log(action, fields),
      })
    : null;
  if (store !== null) mirror!.addSink(store);
  const guard = mirror !== null && (config.guard ?? (await isDirectory(baseFs, config.claudeDir, stderr)))
    ? new Guard({ fs: baseFs, claudeDir: config.claudeDir, clock, stderr, log: (action, fields) => mirror.log(action, fields), ...deps.guard })
    : null;
  if (guard !== null) mirror!.onCommitted((job) => guard.observe(job));
  const viewer = createViewer({
    fs: baseFs, mirrorDir: config.mirrorDir, claudeDir: config.claudeDir, host: config.host, version: VERSION,
    onError: viewerError, prices, clock, watcher,
    guardAlert: guard === null ? undefined : (sessionId) => guard.alertOf(sessionId),
  });
  store?.start();
  const replayed = mirror === null ? { commits: 0, files: [], waiting: 0 } : await mirror.replaySpool();
  const upstream = new UpstreamHealth(config.upstream, clock, stderr);
  const reportUpstream = {
    failed(error: unknown, how: "unreachable" | "broke") {
      upstream.failed(error, how);
      mirror?.log("upstream-error", { how, error: describe(error) });
    },
    answered: () => upstream.answered(),
  };
  // Beyond loopback, anyone on the network could read every conversation: /_tap/ then needs a token.
  const token = config.token !== null ? { value: config.token, generated: false } : isLoopback(config.host) ? null : { value: generateToken(), generated: true };
  let internalErrors = 0;
  const internalError = (error: unknown) => {
    internalErrors++;
    stderr(`sessiontap: internal error answering a request: ${describeBare(error)}`);
  };
  const upstreamFetchFn = await upstreamFetch(deps.fetch ?? fetch);
  const app = createApp({
    forward: (request) =>
      forward(request, { upstream: config.upstream, fetch: upstreamFetchFn, mirror, holdBackMs: config.holdBackMs, upstreamHealth: reportUpstream }),
    health: () => healthReport({ version: VERSION, runtime: runtimeName(), upstream, mirror, store, guard, internalErrors: () => internalErrors }),
    viewer: viewer.deps,
    onError: internalError,
    token: token?.value ?? null,
    allowedHosts: allowedHosts(config.host),
  });
  const server = await listen(app.fetch, { port: config.port, hostname: config.host, onError: internalError });
  if (mirror !== null) {
    mirror.log("start", { version: VERSION, runtime: server.runtime, port: server.port });
    // The first retention sweep runs shortly after start (within a minute), then lazily.
    const first = setTimeout(() => mirror.maybeSweep(), 1000);
    (first as { unref?: () => void }).unref?.();
  }
  const hostForUrl = config.host.includes(":") ? `[${config.host}]` : config.host;
  return {
    url: `http://${hostForUrl}:${server.port}`,
    port: server.port,
    mirror,
    guard,
    replayed,
    token,
    async stop() {
      guard?.stop();
      viewer.close(); // open event streams would otherwise hold the drain to its bound
      await server.stop(config.drainMs);
      const unwritten = mirror === null ? { kind: "none" as const } : await mirror.stop(Math.max(1000, config.holdBackMs * 4));
      await store?.close();
      return unwritten;
    },
  };
}

/** True when `path` is a directory (the guard is on by default only where Claude Code keeps its config). */
async function isDirectory(fs: FsAdapter, path: string, stderr: (line: string) => void): Promise<boolean> {
  try {
    return (await fs.lstat(path))?.isDirectory === true;
  } catch (error) {
    stderr(`sessiontap: guard off: cannot look at ${path} (${describe(error)}); SESSIONTAP_GUARD=on turns it on anyway`);
    return false;
  }
}

/** Runs the tap until SIGINT/SIGTERM; exit 0 after a graceful stop, 1 when commits could be saved nowhere, 2 for an unusable setting. */
export async function runServe(config: Readonly<Config>, io: { stdout: (t: string) => void; stderr: (t: string) => void; stopSignal: Promise<string> }): Promise<number> {
  if (config.mirror) {
    const problem = await prepareRoot(nodeFs, config.mirrorDir);
    if (problem !== null) {
      io.stderr(`sessiontap: cannot mirror to ${config.mirrorDir} (set by ${settingName(config, "mirrorDir")}): ${problem}\n`);
      return 2;
    }
  }
  let tap: RunningTap;
  try {
    tap = await startTap(config, { stderr: (line) => io.stderr(line + "\n") });
  } catch (error) {
    const code = (error as { code?: string }).code ?? "";
    const listening = !(error instanceof PriceFileError) &&
      (["EADDRINUSE", "EACCES", "EADDRNOTAVAIL", "EPERM"].includes(code) || /address|port/i.test(String((error as Error).message)));
    const why = error instanceof PriceFileError ? error.message : describe(error);
    io.stderr(listening ? `sessiontap: cannot listen on ${config.host}:${config.port} (${describe(error)})\n` : `sessiontap: cannot start: ${why}\n`);
    return 2;
  }
  const replay = tap.replayed.commits === 0
    ? []
    : [`  replayed   ${tap.replayed.commits} commit${tap.replayed.commits === 1 ? "" : "s"} an earlier run could not write${tap.replayed.waiting > 0 ? ` (${tap.replayed.waiting} still waiting: see /_tap/health)` : ""}`];
  const exposed = !isLoopback(config.host);
  if (exposed) io.stderr(`sessiontap: WARNING: listening on ${config.host}, reachable from the network; /_tap/ (viewer, API, health details) requires the token\n`);
  const tokenLines = tap.token === null ? [] : [
    tap.token.generated
      ? `  token      ${tap.token.value}  (generated for this run and printed only here; choose one with --token or SESSIONTAP_TOKEN)`
      : `  token      from ${config.tokenSource === "flag" ? "--token" : "SESSIONTAP_TOKEN"}`,
    `  login      ${tap.url}/_tap/login?token=${tap.token.generated ? tap.token.value : "<TOKEN>"}  (or send Authorization: Bearer <TOKEN>)`,
  ];
  io.stdout(
    [
      `sessiontap ${VERSION} (${runtimeName()})`,
      ...(exposed
        ? [`  WARNING    reachable from the network on ${config.host}: anyone who can reach this port can send API traffic through it (their own key pays);`,
          `             the viewer, its API and health details need the token below`]
        : []),
      `  listening  ${tap.url}`,
      ...tokenLines,
      `  upstream   ${config.upstream}`,
      `  mirror     ${config.mirror ? config.mirrorDir : "off"}${config.mirror && config.store !== null && config.storeOnly ? " (outage spool only)" : ""}`,
      ...(config.mirror && config.store !== null ? [`  store      ${redactUrl(config.store)}`] : []),
      ...replay,
      `  guard      ${tap.guard === null ? "off" : `watching Claude Code's transcripts under ${config.claudeDir}/projects`}`,
      `  viewer     ${tap.url}/_tap/`,
      `  health     ${tap.url}/_tap/health`,
      ``,
      `  export ANTHROPIC_BASE_URL=${tap.url}`,
      ``,
    ].join("\n"),
  );
  const signal = await io.stopSignal;
  // Stop accepting first: whoever reads the line may rely on the port being closed by then.
  const stopping = tap.stop();
  io.stderr(`sessiontap: ${signal}, stopping\n`);
  const unwritten = await stopping;
  if (unwritten.kind === "saved") {
    io.stderr(`sessiontap: ${unwritten.commits} commit${unwritten.commits === 1 ? "" : "s"} could not be written to ${config.mirrorDir}; saved in ${unwritten.path}: the next start on this mirror root writes them\n`);
  } else if (unwritten.kind === "lost") {
    io.stderr(`sessiontap: ${unwritten.commits} commit${unwritten.commits === 1 ? "" : "s"} could not be written and could be saved nowhere (${unwritten.error}): those turns are not mirrored\n`);
    return 1;
  }
  return 0;
}
