/**
 * `sessiontap serve`: starts the tap (start-tap.ts), prints the startup block, and stops gracefully on
 * SIGINT/SIGTERM (docs/DESIGN.md "Command line").
 */
import { type Config, settingName } from "../config/parse.ts";
import { runtimeName } from "../runtime/index.ts";
import { describe } from "../utils/describe-error.ts";
import { nodeFs } from "../storage/fs-adapter.ts";
import { redactUrl } from "../store/pg-client.ts";
import { ProxyStartError } from "../config/proxy-settings.ts";
import { PriceFileError } from "../usage/prices.ts";
import { VERSION } from "../version.ts";
import { isLoopback } from "../viewer/index.ts";
import { isListenError, listenFailure } from "./listen-error.ts";
import { prepareRoot } from "./root-check.ts";
import { type RunningTap, startTap } from "./start-tap.ts";
import { plural } from "../utils/plural.ts";

/** Runs the tap until SIGINT/SIGTERM; exit 0 after a graceful stop, 1 when commits could be saved nowhere, 2 for an unusable setting. */
export async function runServe(
  config: Readonly<Config>,
  io: {
    stdout: (t: string) => void;
    stderr: (t: string) => void;
    stopSignal: Promise<string>;
    workerUrl?: URL | string;
    viewerWorkerUrl?: URL | string;
    fetch?: typeof fetch;
  },
): Promise<number> {
  if (config.mirror) {
    const problem = await prepareRoot(nodeFs, config.mirrorDir);
    if (problem !== null) {
      io.stderr(`sessiontap: cannot mirror to ${config.mirrorDir} (set by ${settingName(config, "mirrorDir")}): ${problem}\n`);
      return 2;
    }
  }
  let tap: RunningTap;
  try {
    tap = await startTap(config, { stderr: (line) => io.stderr(line + "\n"), workerUrl: io.workerUrl, viewerWorkerUrl: io.viewerWorkerUrl });
  } catch (error) {
    // The runtime's own words ("Failed to start server. Is port 8787 in use?") never reach the user.
    const own = error instanceof PriceFileError || error instanceof ProxyStartError;
    io.stderr(
      own || !isListenError(error)
        ? `sessiontap: cannot start: ${own ? error.message : describe(error)}\n`
        : `${await listenFailure(config, error, io.fetch ?? fetch)}\n`,
    );
    return 2;
  }
  const replay = tap.replayed.commits === 0 ? [] : [
    `  replayed   ${plural(tap.replayed.commits, "commit")} an earlier run could not write${
      tap.replayed.waiting > 0 ? ` (${tap.replayed.waiting} still waiting: see /_tap/health)` : ""
    }`,
  ];
  const exposed = !isLoopback(config.host);
  if (exposed) {
    io.stderr(`sessiontap: WARNING: listening on ${config.host}, reachable from the network; /_tap/ (viewer, API, health details) requires the token\n`);
  }
  const tokenLines = tap.token === null ? [] : [
    tap.token.generated
      ? `  token      ${tap.token.value}  (generated for this run and printed only here; choose one with --token or SESSIONTAP_TOKEN)`
      : `  token      from ${config.tokenSource === "flag" ? "--token" : "SESSIONTAP_TOKEN"}`,
    `  login      ${tap.url}/_tap/login?token=${tap.token.generated ? tap.token.value : "<TOKEN>"}  (or send Authorization: Bearer <TOKEN>)`,
  ];
  const proxy = proxyLines(config, tap);
  if (tap.proxy !== null && tap.proxy.ca.made !== null && tap.proxy.ca.made !== "made") {
    io.stderr(
      `sessiontap: made a new proxy CA in ${
        config.proxy!.caDir
      } (the old one: ${tap.proxy.ca.made}); clients started with the old one must be restarted to trust it\n`,
    );
  }
  io.stdout(
    [
      `sessiontap ${VERSION} (${runtimeName()})`,
      ...(exposed
        ? [
          `  WARNING    reachable from the network on ${config.host}: anyone who can reach this port can send API traffic through it (their own key pays);`,
          `             the viewer, its API and health details need the token below`,
        ]
        : []),
      `  listening  ${tap.url}`,
      ...tokenLines,
      `  upstream   ${config.upstream}`,
      `  mirror     ${config.mirror ? config.mirrorDir : "off"}${config.mirror && config.store !== null && config.storeOnly ? " (outage spool only)" : ""}`,
      ...(config.mirror && config.store !== null ? [`  store      ${redactUrl(config.store)}`] : []),
      ...replay,
      `  guard      ${tap.guard === null ? "off" : `watching Claude Code's transcripts under ${config.claudeDir}/projects`}`,
      ...proxy.status,
      `  viewer     ${tap.url}/_tap/`,
      `  health     ${tap.url}/_tap/health`,
      ``,
      `  export ANTHROPIC_BASE_URL=${tap.url}`,
      // Beyond loopback, API traffic is mirrored only with the token (docs/DESIGN.md "Who a session belongs to").
      ...(exposed && tap.token !== null
        ? [`  export ANTHROPIC_CUSTOM_HEADERS="x-sessiontap-token: <TOKEN>"  (the token above: without it, API traffic is relayed, not mirrored)`]
        : []),
      ``,
      ...proxy.exports,
    ].join("\n"),
  );
  const signal = await io.stopSignal;
  // Said once the port is closed: whoever reads the line may rely on it.
  let unwritten;
  try {
    unwritten = await tap.stop(() => io.stderr(`sessiontap: ${signal}, stopping\n`));
  } catch (error) {
    // The engine had stopped (said on stderr then): what it held in memory could not be saved.
    io.stderr(`sessiontap: the mirror could not be stopped cleanly (${describe(error)}): answers it held in memory are not mirrored\n`);
    return 1;
  }
  if (unwritten.kind === "saved") {
    io.stderr(
      `sessiontap: ${
        plural(unwritten.commits, "commit")
      } could not be written to ${config.mirrorDir}; saved in ${unwritten.path}: the next start on this mirror root writes them\n`,
    );
  } else if (unwritten.kind === "lost") {
    io.stderr(
      `sessiontap: ${plural(unwritten.commits, "commit")} could not be written and could be saved nowhere (${unwritten.error}): those turns are not mirrored\n`,
    );
    return 1;
  }
  return 0;
}

/** A path as a shell word. */
function shellWord(path: string): string {
  return /^[A-Za-z0-9_./:@%+=-]+$/.test(path) ? path : `'${path.replace(/'/g, "'\\''")}'`;
}

/** The startup block's proxy lines (docs/DESIGN.md "Proxy mode"): where it listens, its CA, and the two lines to export. */
function proxyLines(config: Readonly<Config>, tap: RunningTap): { status: string[]; exports: string[] } {
  if (tap.proxy === null) return { status: [], exports: [] };
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const credentials = tap.token === null ? "" : `sessiontap:${tap.token.generated ? tap.token.value : "<TOKEN>"}@`;
  const made = tap.proxy.ca.made === null ? "" : " (made now)";
  return {
    status: [
      `  proxy      http://${host}:${tap.proxy.port}  (${tap.proxy.summary})`,
      `  proxy CA   ${tap.proxy.ca.certPath}${made}  (trusted only by processes started with NODE_EXTRA_CA_CERTS)`,
    ],
    exports: [
      `  or, in proxy mode (no ANTHROPIC_BASE_URL):`,
      `  export HTTPS_PROXY=http://${credentials}${host}:${tap.proxy.port}`,
      `  export NODE_EXTRA_CA_CERTS=${shellWord(tap.proxy.ca.certPath)}`,
      ``,
    ],
  };
}
