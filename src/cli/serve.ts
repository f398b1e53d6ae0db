/**
 * `sessiontap serve`: wires the mirror (tap), the app (server) and the runtime adapter, prints the startup
 * block, and stops gracefully on SIGINT/SIGTERM (SPEC §2). `startTap` is the same wiring for tests, with
 * the filesystem, fetch and clock injectable.
 */
import type { Config } from "../config.ts";
import { listen, runtimeName } from "../runtime/index.ts";
import { createApp } from "../server/app.ts";
import { describe } from "../storage/events-log.ts";
import { nodeFs, type FsAdapter } from "../storage/fs-adapter.ts";
import { forward } from "../tap/forward.ts";
import { Mirror } from "../tap/mirror.ts";
import { redactUrl } from "../store/pg-client.ts";
import { PgSink } from "../store/pg-sink.ts";
import { VERSION } from "../version.ts";
import { createViewer } from "../viewer/index.ts";
import { observeWrites } from "../viewer/live.ts";
import { checkRoot } from "./root-check.ts";

/** Seams a test may replace. */
export interface TapDeps {
  fs?: FsAdapter;
  fetch?: typeof fetch;
  clock?: () => number;
  stderr?: (line: string) => void;
}

/** A tap that is listening. */
export interface RunningTap {
  url: string;
  port: number;
  mirror: Mirror | null;
  /** Stops accepting, drains in-flight responses (bounded), flushes the mirror. */
  stop(): Promise<void>;
}

/** Starts a tap on `config` (in this process). */
export async function startTap(config: Readonly<Config>, deps: TapDeps = {}): Promise<RunningTap> {
  const clock = deps.clock ?? Date.now;
  const stderr = deps.stderr ?? ((line: string) => console.error(line));
  // The viewer reads the tree; every mirror write under it hints its watcher, so new records show at once.
  const viewer = createViewer({
    fs: deps.fs ?? nodeFs, mirrorDir: config.mirrorDir, claudeDir: config.claudeDir, host: config.host, version: VERSION,
    onError: (error) => stderr(`sessiontap: viewer: ${describe(error)}`),
  });
  const fs = observeWrites(deps.fs ?? nodeFs, viewer.watcher);
  // The shared store (issue 7): every commit also goes there; with SESSIONTAP_STORE_ONLY only there.
  const store = config.mirror && config.store !== null
    ? new PgSink({
        url: config.store, fs: deps.fs ?? nodeFs, root: config.mirrorDir, includeThinking: config.includeThinking, maxSessions: config.maxSessions,
        log: (action, fields) => mirror?.log(action, fields),
      })
    : null;
  const mirror = config.mirror
    ? new Mirror({
        fs, root: config.mirrorDir, maxBytes: config.maxBytes, retentionDays: config.retentionDays,
        maxSessions: config.maxSessions, includeThinking: config.includeThinking, sideRequests: config.sideRequests,
        version: VERSION, clock, stderr, lockWaitMs: config.lockWaitMs, maxQueued: config.maxQueued,
        sinks: store === null ? [] : [store], files: !(store !== null && config.storeOnly),
      })
    : null;
  store?.start();
  let fetchInit: Record<string, unknown> = {};
  const app = createApp({
    forward: (request) =>
      forward(request, {
        upstream: config.upstream, fetch: deps.fetch ?? fetch, mirror, holdBackMs: config.holdBackMs, fetchInit,
        logError: (what, error) => {
          stderr(`sessiontap: ${what}: ${describe(error)}`);
          mirror?.log("upstream-error", { error: describe(error) });
        },
      }),
    health: () => ({
      version: VERSION,
      runtime: runtimeName(),
      upstream: config.upstream,
      mirror: mirror === null ? "off" : { root: config.mirrorDir, ...mirror.stats, eventsLogFailures: mirror.events.failures, sessionsInMemory: mirror.sessionsInMemory },
      store: store === null ? "off" : store.health(),
    }),
    viewer: viewer.deps,
  });
  const server = await listen(app.fetch, {
    port: config.port, hostname: config.host, onError: (error) => stderr(`sessiontap: internal error: ${describe(error)}`),
  });
  fetchInit = server.fetchInit;
  if (mirror !== null) {
    mirror.log("start", { version: VERSION, runtime: server.runtime, port: server.port });
    // The first retention sweep runs shortly after start (SPEC §4: within a minute), then lazily.
    const first = setTimeout(() => mirror.maybeSweep(), 1000);
    (first as { unref?: () => void }).unref?.();
  }
  const hostForUrl = config.host.includes(":") ? `[${config.host}]` : config.host;
  return {
    url: `http://${hostForUrl}:${server.port}`,
    port: server.port,
    mirror,
    async stop() {
      viewer.close(); // open event streams would otherwise hold the drain to its bound
      await server.stop(config.drainMs);
      if (mirror !== null) {
        mirror.log("stop", {});
        await mirror.flush(Math.max(1000, config.holdBackMs * 4));
      }
      await store?.close();
    },
  };
}

/** Runs the tap until SIGINT/SIGTERM; exit 0 after a graceful stop, 2 for an unusable setting. */
export async function runServe(config: Readonly<Config>, io: { stdout: (t: string) => void; stderr: (t: string) => void; stopSignal: Promise<string> }): Promise<number> {
  if (config.mirror) {
    const problem = await checkRoot(nodeFs, config.mirrorDir);
    if (problem !== null) {
      io.stderr(`sessiontap: mirror root (--mirror-dir / SESSIONTAP_MIRROR_DIR) ${problem}\n`);
      return 2;
    }
  }
  let tap: RunningTap;
  try {
    tap = await startTap(config, { stderr: (line) => io.stderr(line + "\n") });
  } catch (error) {
    io.stderr(`sessiontap: cannot listen on ${config.host}:${config.port} (${describe(error)})\n`);
    return 2;
  }
  io.stdout(
    [
      `sessiontap ${VERSION} (${runtimeName()})`,
      `  listening  ${tap.url}`,
      `  upstream   ${config.upstream}`,
      `  mirror     ${config.mirror ? config.mirrorDir : "off"}${config.mirror && config.store !== null && config.storeOnly ? " (outage spool only)" : ""}`,
      ...(config.mirror && config.store !== null ? [`  store      ${redactUrl(config.store)}`] : []),
      `  viewer     ${tap.url}/_tap/`,
      ``,
      `  export ANTHROPIC_BASE_URL=${tap.url}`,
      ``,
    ].join("\n"),
  );
  const signal = await io.stopSignal;
  io.stderr(`sessiontap: ${signal}, stopping\n`);
  await tap.stop();
  return 0;
}
