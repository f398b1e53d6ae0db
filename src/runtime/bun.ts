// Bun.serve and Bun's fetch as the tap needs them (docs/DESIGN.md "Map"): no idle timeouts (docs/RUNTIMES.md "Serving").
import type { FetchHandler, ListenOptions, RunningServer } from "./index.ts";
import { settlesWithin } from "../utils/within.ts";

/** Bun's fetch for upstream requests: without `timeout: false` it gives up after 300 s without data. */
export function bunFetch(base: typeof fetch): typeof fetch {
  return ((input: RequestInfo | URL, init?: RequestInit) => base(input, { ...init, timeout: false } as RequestInit)) as typeof fetch;
}

export async function bunBundle(entry: URL): Promise<string> {
  const out = await Bun.build({ entrypoints: [Bun.fileURLToPath(entry)], target: "browser", format: "iife", minify: true });
  if (!out.success) throw new Error(out.logs.map(String).join("; "));
  return await out.outputs[0].text();
}

export function serveBun(handler: FetchHandler, options: ListenOptions): RunningServer {
  const server = Bun.serve({
    port: options.port,
    hostname: options.hostname,
    idleTimeout: 0,
    fetch: (request, bun) => handler(request, bun.requestIP(request)),
    error(error) {
      options.onError(error);
      return new Response("sessiontap: internal error", { status: 500 });
    },
  });
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
