// Starts a tap (docs/DESIGN.md "Off the relay path"): the mirror engine in its own thread, the viewer, the app and the runtime's server.
import process from "node:process";
import type { Config } from "../config/parse.ts";
import type { GuardAlert, GuardOptions } from "../guard/guard.ts";
import type { EngineSeams, EngineSettings } from "../mirror/messages.ts";
import type { Unwritten } from "../mirror/mirror.ts";
import { bundleScript, listen, runtimeName, upstreamFetch } from "../runtime/index.ts";
import { createApp, type Peer } from "../server/app.ts";
import { generateToken, socketUid, TokenGate } from "../server/request-guard.ts";
import { describe, describeBare } from "../utils/describe-error.ts";
import type { EventFields } from "../storage/events-log.ts";
import { nodeFs } from "../storage/fs-adapter.ts";
import { loadPrices } from "../usage/prices.ts";
import { bindingKey } from "../storage/binding-files.ts";
import { startThreadEngine, startWorkerEngine } from "../tap/engine-link.ts";
import { forward, refusalNotice } from "../tap/forward.ts";
import { UpstreamHealth } from "../utils/upstream-health.ts";
import { VERSION } from "../version.ts";
import { isLoopback } from "../viewer/hosts.ts";
import { createViewer } from "../viewer/routes.ts";
import { healthProof, leaveToken, localAddress } from "./tap-probe.ts";

export interface TapDeps {
  /** The engine and the viewer's reader in this thread (the launcher's fallback). */
  inThread?: boolean;
  engineSeams?: EngineSeams;
  fetch?: typeof fetch;
  clock?: () => number;
  stderr?: (line: string) => void;
  spoolTmpDir?: string;
  guard?: Partial<Pick<GuardOptions, "settleMs" | "confirmMs" | "sweepMs" | "maxLooksPerMinute" | "maxBytesPerLook" | "tailBytes">>;
  workerUrl?: URL | string;
  viewerWorkerUrl?: URL | string;
  procNet?: string;
}

/** The tap `startTap` started: its `token` is the one `/_tap/` requires (null: none, loopback only), `generated` when this start made it up. */
export type RunningTap = Awaited<ReturnType<typeof startTap>>;

/** Longest wait at stop for the engine's writes in flight, before what is left is spooled. */
const STOP_FLUSH_MS = 1000;
/** Sized request bodies up to this are read whole before they go upstream (src/tap/forward.ts). */
const READ_FIRST_BYTES = 1024 * 1024;

/** The config handed down whole, with what the start adds (exported for the suites and the bench that drive an engine directly). */
export function engineSettings(config: Readonly<Config>, deps: Pick<TapDeps, "guard" | "spoolTmpDir"> = {}): EngineSettings {
  const { token: _token, ...settings } = config; // the /_tap/ token is the relay's alone: it never crosses into the engine
  return { ...settings, version: VERSION, bindingKey: null, guardTimings: deps.guard, spoolTmpDir: deps.spoolTmpDir ?? null };
}

export async function startTap(config: Readonly<Config>, deps: TapDeps = {}) {
  const clock = deps.clock ?? Date.now;
  const stderr = deps.stderr ?? ((line: string) => console.error(line));
  const prices = await loadPrices(nodeFs, config.prices);
  let alerts = new Map<string, GuardAlert>();
  const bindingSecret = config.mirror ? await bindingKey(nodeFs, config.mirrorDir) : null;
  const viewer = createViewer({
    fs: deps.inThread ? nodeFs : undefined,
    clock: deps.inThread ? clock : undefined,
    workerUrl: deps.viewerWorkerUrl,
    mirrorDir: config.mirrorDir,
    claudeDir: config.claudeDir,
    host: config.host,
    version: VERSION,
    onError: (error) => stderr(`sessiontap: viewer: ${describe(error)}`),
    prices,
    redact: config.redact !== "off",
    bundle: bundleScript,
    guardAlert: (sessionId) => alerts.get(sessionId) ?? null,
    restored: async (sessionId) => void (guarded && (await link!.query("guard.lookNow", sessionId))),
  });
  const settings = { ...engineSettings(config, deps), bindingKey: bindingSecret, lockHolder: crypto.randomUUID() };
  const listener = { stderr, alerts: (list: GuardAlert[]) => (alerts = new Map(list.map((a) => [a.sessionId, a]))) };
  const workerUrl = deps.workerUrl ?? new URL("../mirror-worker.ts", import.meta.url);
  const engine = !config.mirror
    ? null
    : await (deps.inThread ? startThreadEngine(settings, listener) : startWorkerEngine(workerUrl, settings, listener, deps.engineSeams));
  const link = engine?.link ?? null;
  const log = (action: string, fields: EventFields) => link?.send({ t: "log", action, fields });
  const guarded = engine?.guard === true;
  const upstream = new UpstreamHealth(config.upstream, clock, stderr, (fields) => log("upstream-error", fields));
  // Beyond loopback /_tap/ needs a token; on loopback it answers its own user, by the uid of the client's socket, else by a token of this run's.
  const token = config.token !== null
    ? { value: config.token, generated: false }
    : isLoopback(config.host)
    ? null
    : { value: generateToken(), generated: true };
  // Beyond loopback, API traffic must carry the token to be mirrored (docs/DESIGN.md "Who a session belongs to").
  link?.identify(bindingSecret, token !== null && !isLoopback(config.host) ? token.value : null);
  const sockets = () => Promise.all(["tcp", "tcp6"].map((f) => nodeFs.readText(`${deps.procNet ?? "/proc/net"}/${f}`).catch(() => ""))).then((t) => t.join(""));
  const uid = process.getuid?.() ?? null;
  const owns = async (peer: Peer, port: number) => {
    const owner = socketUid(await sockets(), peer, port);
    return owner === null || uid === null ? null : owner === uid;
  };
  const kernelSays = token === null && uid !== null && (await sockets()) !== "";
  const gate = new TokenGate(token?.value ?? generateToken(), { clock, stderr, onFailure: (fields) => log("token-failure", fields) });
  let internalErrors = 0;
  const internalError = (error: unknown) => {
    internalErrors++;
    stderr(`sessiontap: internal error answering a request: ${describeBare(error)}`);
  };
  const cut = new AbortController();
  const forwardDeps = {
    upstream: config.upstream,
    fetch: await upstreamFetch(deps.fetch ?? fetch),
    runtime: runtimeName(),
    engine: link,
    maxMessageBytes: config.maxMessageBytes,
    clock,
    upstreamHealth: upstream,
    refused: refusalNotice(stderr, link),
    stopping: cut.signal,
    // A large body streams where fetch keeps its length (Bun), and is read first where it would go chunked (Deno).
    readFirstBytes: runtimeName() === "bun" ? READ_FIRST_BYTES : Number.POSITIVE_INFINITY,
  };
  // Loaded only when asked for: the certificate library costs a start ~70 ms.
  const proxy = config.proxy === null ? null : await (await import("../proxy/proxy-server.ts")).startProxy(config.proxy, {
    fs: nodeFs,
    stderr,
    forwardDeps,
    host: config.host,
    token: token?.value ?? null,
    log,
    tapPort: () => listening,
    tokenGate: gate,
    owner: owns,
  }).catch(async (error) => {
    // A proxy that cannot start stops the start: nothing started before it may keep running.
    viewer.close();
    await link?.stop(STOP_FLUSH_MS).catch(() => undefined);
    throw error;
  });
  let listening = config.port;
  const app = createApp({
    forward: (request) => forward(request, forwardDeps),
    health: async () => {
      const [up, part] = [upstream.state(), await link?.health()];
      const problems = [...upstream.problems(), ...(proxy?.problems() ?? []), ...(part?.problems ?? [])];
      return {
        status: problems.length === 0 ? "ok" : "degraded",
        problems,
        version: VERSION,
        runtime: runtimeName(),
        pid: process.pid,
        upstream: up,
        mirror: part?.mirror ?? "off",
        store: part?.store ?? "off",
        guard: part?.guard ?? "off",
        internalErrors,
        engineRestarts: link?.restarts ?? 0,
        ...(kernelSays ? {} : { token: gate.stats() }),
        ...(proxy === null ? {} : { proxy: proxy.health() }),
      };
    },
    viewer: viewer.deps,
    prove: (nonce) => bindingSecret === null ? null : healthProof(bindingSecret, nonce, `${localAddress(config.host)}:${listening}`),
    onError: internalError,
    gate,
    owner: token !== null ? undefined : (peer: Peer) => owns(peer, server.port),
  });
  const server = await listen((request, peer) => app.fetch(request, { peer }), { port: config.port, hostname: config.host, onError: internalError, cut })
    .catch(async (error) => {
      await proxy?.stop(0);
      throw error;
    });
  listening = server.port;
  if (link !== null) {
    log("start", { version: VERSION, runtime: server.runtime, port: server.port, ...(proxy === null ? {} : { proxyPort: proxy.port }) });
    // A failure of the first sweep the engine reports; a refused call means it stopped, said already.
    const first = setTimeout(() => link.query("mirror.sweep").then(undefined, () => undefined), 1000);
    (first as { unref?: () => void }).unref?.();
  }
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${server.port}`;
  const tokenOnly = token === null && !kernelSays;
  if (tokenOnly && config.mirror) await leaveToken(nodeFs, config.mirrorDir, server.port, gate.token!).catch((e) => stderr(`sessiontap: ${describe(e)}`));
  return {
    url,
    /** The viewer's URL, with this run's token where the kernel cannot name a client's user. */
    viewer: tokenOnly ? `${url}/_tap/login?token=${gate.token}` : `${url}/_tap/`,
    port: server.port,
    /** The mirror engine's calls ("mirror.flush", "stats", "guard.inspect", …); null with the mirror off. */
    engine: link,
    guarded,
    alertOf: (id: string) => alerts.get(id) ?? null,
    proxy,
    replayed: engine?.replayed ?? { commits: 0, files: [], waiting: 0 },
    token,
    /** Stops accepting (then calls `closed`), drains in-flight responses (bounded), flushes the mirror, saves what it could not write. */
    async stop(closed?: () => void): Promise<Unwritten> {
      viewer.close(); // open event streams would otherwise hold the drain to its bound
      await Promise.all([server.stop(config.drainMs, closed), proxy?.stop(config.drainMs)]);
      return link === null ? { kind: "none" as const } : await link.stop(STOP_FLUSH_MS);
    },
  };
}
