// Deno.serve as the tap needs it (docs/DESIGN.md "Map"); run with --unstable-no-legacy-abort (docs/RUNTIMES.md "Client disconnect").
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { FetchHandler, ListenOptions, RunningServer } from "./index.ts";
import { settlesWithin } from "../utils/alarm.ts";

// Not Deno's own types: the shared type-check does without them.
declare const Deno: {
  connect(options: { hostname: string; port: number }): Promise<{ close(): void }>;
  serve(
    options: { port: number; hostname: string; onListen?: (addr: { port: number }) => void; onError?: (e: unknown) => Response },
    handler: (request: Request, info: { remoteAddr?: { hostname: string; port: number } }) => Response | Promise<Response>,
  ): { addr: { port: number }; shutdown(): Promise<void>; finished: Promise<void> };
};

/** Bun's bundler, run from the dev dependencies: Deno's own `deno bundle` is experimental and fetches esbuild from the network. */
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

/** Resolves once a connection to the port is refused (at most ~500 ms): Deno closes the listener a moment after shutdown() returns. */
async function refusing(hostname: string, port: number): Promise<void> {
  const host = hostname === "0.0.0.0" ? "127.0.0.1" : hostname === "::" || hostname === "[::]" ? "::1" : hostname.replace(/^\[|\]$/g, "");
  for (let i = 0; i < 100; i++) {
    try {
      (await Deno.connect({ hostname: host, port })).close();
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export function serveDeno(handler: FetchHandler, options: ListenOptions): RunningServer {
  const server = Deno.serve(
    {
      port: options.port,
      hostname: options.hostname,
      onListen: () => {},
      onError(error) {
        // A body the tap cut on purpose errors with no reason (tap/tee.ts cutQuietly): not an internal error.
        if (error !== undefined) options.onError(error);
        return new Response("sessiontap: internal error", { status: 500 });
      },
    },
    (request, info) => handler(request, info.remoteAddr ? { address: info.remoteAddr.hostname, port: info.remoteAddr.port } : null),
  );
  return {
    port: server.addr.port,
    runtime: "deno",
    async stop(drainMs, closed) {
      const finished = server.shutdown();
      await refusing(options.hostname, server.addr.port);
      closed?.();
      if (await settlesWithin(finished, drainMs)) return;
      // Not Deno.serve's `signal` (aborted after shutdown() began, Deno 2.9 raises an uncaught BadResource), nor a Request with a
      // combined signal (fetch then sends its body chunked: docs/RUNTIMES.md "Request bodies").
      options.cut.abort(new Error("sessiontap: stopping"));
      await settlesWithin(finished, 1000);
    },
  };
}
