/** Deno adapter: Deno.serve; run with --unstable-no-legacy-abort (docs/RUNTIMES.md "Client disconnect"). */
import { authority, soundRequest } from "./sound-request.ts";
import type { FetchHandler, ListenOptions, RunningServer } from "./types.ts";
import { settlesWithin } from "../utils/within.ts";

// Declared here, not pulled from Deno's types, so the shared type-check does not need them.
declare const Deno: {
  serve(
    options: { port: number; hostname: string; signal?: AbortSignal; onListen?: (addr: { port: number }) => void; onError?: (e: unknown) => Response },
    handler: FetchHandler,
  ): { addr: { port: number }; shutdown(): Promise<void>; finished: Promise<void> };
};

/** Serves `handler` with Deno.serve (no idle timeout of its own). */
export function serveDeno(handler: FetchHandler, options: ListenOptions): RunningServer {
  // Cuts what is still in flight past the drain bound, through each request's signal (it aborts the
  // upstream fetch, which ends the response). Not Deno.serve's own `signal`: aborting that once shutdown()
  // has begun raises an uncaught BadResource in Deno 2.9 and the process exits 1.
  const cut = new AbortController();
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
    (request) => {
      const sound = soundRequest(request, own);
      return sound instanceof Response ? sound : handler(new Request(sound, { signal: AbortSignal.any([request.signal, cut.signal]) }));
    },
  );
  own = authority(options.hostname, server.addr.port);
  return {
    port: server.addr.port,
    runtime: "deno",
    async stop(drainMs) {
      const finished = server.shutdown();
      if (await settlesWithin(finished, drainMs)) return;
      cut.abort(new Error("sessiontap: stopping"));
      await settlesWithin(finished, 1000);
    },
  };
}
