/** Deno adapter: Deno.serve; run with --unstable-no-legacy-abort (docs/RUNTIMES.md "Client disconnect"). */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { authority, soundRequest } from "./sound-request.ts";
import type { FetchHandler, ListenOptions, RunningServer } from "./types.ts";
import { settlesWithin } from "../utils/within.ts";

// Declared here, not pulled from Deno's types, so the shared type-check does not need them.
declare const Deno: {
  connect(options: { hostname: string; port: number }): Promise<{ close(): void }>;
  serve(
    options: { port: number; hostname: string; signal?: AbortSignal; onListen?: (addr: { port: number }) => void; onError?: (e: unknown) => Response },
    handler: (request: Request, info: { remoteAddr?: { hostname?: string } }) => Response | Promise<Response>,
  ): { addr: { port: number }; shutdown(): Promise<void>; finished: Promise<void> };
};

/**
 * Bundles the browser module `entry` into one minified classic script with Bun's bundler, run from the
 * dev dependencies: Deno's own `deno bundle` is experimental and fetches esbuild from the network.
 */
export function bunCliBundle(entry: URL): Promise<string> {
  const bun = fileURLToPath(new URL("../../node_modules/.bin/bun", import.meta.url));
  const args = ["build", "--target=browser", "--format=iife", "--minify", fileURLToPath(entry)];
  return new Promise((resolve, reject) => {
    execFile(bun, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout);
      else reject(new Error(`${bun} ${args.join(" ")}: ${String(stderr).trim() || error.message} (npm ci installs Bun, a dev dependency)`));
    });
  });
}

/** Resolves once a connection to the port is refused (at most ~500 ms). */
async function refusing(hostname: string, port: number): Promise<void> {
  const host = hostname === "0.0.0.0" ? "127.0.0.1" : hostname === "::" || hostname === "[::]" ? "::1" : hostname.replace(/^\[|\]$/g, "");
  for (let i = 0; i < 100; i++) {
    try {
      (await Deno.connect({ hostname: host, port })).close();
    } catch {
      return; // refused: the listener is closed
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Serves `handler` with Deno.serve (no idle timeout of its own). */
export function serveDeno(handler: FetchHandler, options: ListenOptions): RunningServer {
  // Cuts what is still in flight past the drain bound through options.cut, which the handler ties each
  // upstream fetch to (it ends the response). Not Deno.serve's own `signal`: aborting that once shutdown()
  // has begun raises an uncaught BadResource in Deno 2.9 and the process exits 1. Not a new Request with a
  // combined signal either: that turns the request's native body into a JavaScript stream, which fetch
  // then sends chunked (docs/RUNTIMES.md "Request bodies").
  let own = "";
  const server = Deno.serve(
    {
      port: options.port,
      hostname: options.hostname,
      onListen: () => {},
      onError(error) {
        // A response body the tap cut on purpose errors with no reason (tap/tee.ts cutQuietly): not an internal error.
        if (error !== undefined) options.onError(error);
        return new Response("sessiontap: internal error", { status: 500 });
      },
    },
    (request, info) => {
      const sound = soundRequest(request, own);
      return sound instanceof Response ? sound : handler(sound, info.remoteAddr?.hostname ?? "unknown");
    },
  );
  own = authority(options.hostname, server.addr.port);
  return {
    port: server.addr.port,
    runtime: "deno",
    async stop(drainMs, closed) {
      const finished = server.shutdown();
      // Deno closes the listener a moment after shutdown() returns: wait until the port refuses, so that
      // whoever is told "stopping" can rely on it (bounded; docs/RUNTIMES.md "Serving").
      await refusing(options.hostname, server.addr.port);
      closed?.();
      if (await settlesWithin(finished, drainMs)) return;
      options.cut.abort(new Error("sessiontap: stopping"));
      await settlesWithin(finished, 1000);
    },
  };
}
