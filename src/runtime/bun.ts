/** Bun adapter: Bun.serve with the tap's options (docs/RUNTIMES.md "Serving"). */
import { authority, soundRequest } from "./sound-request.ts";
import type { FetchHandler, ListenOptions, RunningServer } from "./types.ts";
import { settlesWithin } from "../utils/within.ts";

/** Bun's fetch for upstream requests: without `timeout: false` it gives up after 300 s without data. */
export function bunFetch(base: typeof fetch): typeof fetch {
  return ((input: RequestInfo | URL, init?: RequestInit) => base(input, { ...init, timeout: false } as RequestInit)) as typeof fetch;
}

/** Bundles the browser module `entry` and what it imports into one minified classic script, with Bun's bundler. */
export async function bunBundle(entry: URL): Promise<string> {
  const out = await Bun.build({ entrypoints: [Bun.fileURLToPath(entry)], target: "browser", format: "iife", minify: true });
  if (!out.success) throw new Error(out.logs.map(String).join("; "));
  return await out.outputs[0].text();
}

/** Serves `handler` with Bun.serve: no idle timeout, so a quiet stream is never cut by the tap. */
export function serveBun(handler: FetchHandler, options: ListenOptions): RunningServer {
  let own = "";
  const server = Bun.serve({
    port: options.port,
    hostname: options.hostname,
    idleTimeout: 0,
    fetch(request, bun) {
      const sound = soundRequest(request, own);
      return sound instanceof Response ? sound : handler(sound, bun.requestIP(request)?.address ?? "unknown");
    },
    error(error) {
      options.onError(error);
      return new Response("sessiontap: internal error", { status: 500 });
    },
  });
  own = authority(options.hostname, server.port ?? options.port);
  return {
    port: server.port ?? options.port,
    runtime: "bun",
    async stop(drainMs, closed) {
      const draining = server.stop(false); // the listener is closed when this returns
      closed?.();
      await settlesWithin(draining, drainMs);
      await server.stop(true);
    },
  };
}
