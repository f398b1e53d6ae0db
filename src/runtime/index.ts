// The runtime's shell (docs/DESIGN.md "Map"): which runtime this is, its server (Bun's here, Deno's in deno.ts) with odd requests
// made whole, its upstream fetch and bundler, the command's arguments, and output written whole.
import { settlesWithin } from "../utils/alarm.ts";

export type FetchHandler = (request: Request, peer: { address: string; port: number } | null) => Response | Promise<Response>;

export interface RunningServer {
  port: number;
  runtime: "bun" | "deno";
  /** Stops accepting, calls `closed` once the port refuses, waits for in-flight responses at most `drainMs`, then cuts them. */
  stop(drainMs: number, closed?: () => void): Promise<void>;
}

export interface ListenOptions {
  port: number;
  hostname: string;
  onError: (error: unknown) => void;
  /** Aborted when the drain bound passes, for a runtime that cannot cut responses itself (Deno): each upstream fetch is tied to it. */
  cut: AbortController;
}

export function runtimeName(): "bun" | "deno" {
  return typeof (globalThis as { Bun?: unknown }).Bun !== "undefined" ? "bun" : "deno";
}

/** Bun's fetch for upstream requests: without `timeout: false` it gives up after 300 s without data (docs/RUNTIMES.md "Serving"). */
export function upstreamFetch(base: typeof fetch): Promise<typeof fetch> {
  const bun = ((input: RequestInfo | URL, init?: RequestInit) => base(input, { ...init, timeout: false } as RequestInit)) as typeof fetch;
  return Promise.resolve(runtimeName() === "bun" ? bun : base);
}

export async function bundleScript(entry: URL): Promise<string> {
  if (runtimeName() !== "bun") return (await import("./deno.ts")).bunCliBundle(entry);
  const out = await Bun.build({ entrypoints: [Bun.fileURLToPath(entry)], target: "browser", format: "iife", minify: true });
  if (!out.success) throw new Error(out.logs.map(String).join("; "));
  return await out.outputs[0].text();
}

// No idle timeouts: an answer may think for minutes before its first byte (docs/RUNTIMES.md "Serving").
function serveBun(handler: FetchHandler, options: ListenOptions): RunningServer {
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

const HOST = /^(?:\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9._~-]+)?\]|[A-Za-z0-9._~-]+)(?::(\d{1,5}))?$/;

// Bun made a path-only URL of a request without a Host, and a Host that is no host (`a b`, `x/y`) made it unparseable or moved
// the path: such a request takes the listening authority `own`, or is a 400.
export function soundRequest(request: Request, own: string): Request | Response {
  const host = (request.headers.get("host") ?? "").trim();
  if (host !== "") {
    const m = HOST.exec(host);
    if (m === null || (m[1] !== undefined && Number(m[1]) > 65535)) return badRequest("the Host header is not a host name or address");
    if (URL.canParse(request.url) && new URL(request.url).host !== "") return request;
  }
  const scheme = request.url.indexOf("://");
  const slash = scheme < 0 ? -1 : request.url.indexOf("/", scheme + 3);
  const url = new URL(request.url.startsWith("/") ? request.url : slash < 0 ? "/" : request.url.slice(slash), `http://${own}`);
  if (url.host !== new URL(`http://${own}`).host) return badRequest("the request target is not a path");
  return new Request(url, request);
}

function badRequest(why: string): Response {
  const body = { type: "error", error: { type: "invalid_request_error", message: `sessiontap: ${why}` } };
  return new Response(JSON.stringify(body), { status: 400, headers: { "content-type": "application/json", connection: "close" } });
}

export async function listen(handler: FetchHandler, options: ListenOptions): Promise<RunningServer> {
  let own = "";
  const sound: FetchHandler = (request, peer) => {
    const whole = soundRequest(request, own);
    return whole instanceof Response ? whole : handler(whole, peer);
  };
  const server = runtimeName() === "bun" ? serveBun(sound, options) : (await import("./deno.ts")).serveDeno(sound, options);
  own = `${options.hostname.includes(":") && !options.hostname.startsWith("[") ? `[${options.hostname}]` : options.hostname}:${server.port}`;
  return server;
}

export function commandArgs(): string[] {
  const deno = (globalThis as { Deno?: { args: string[] } }).Deno;
  return deno !== undefined ? [...deno.args] : process.argv.slice(2);
}

// `process.exit()` right after a large write loses what a pipe has not taken yet (docs/RUNTIMES.md "Output to a pipe"):
// `finished()` waits for every write, and resolves with the first failure (EPIPE), or null.
export function awaitedOutput(stream: {
  write(text: string, callback: (error?: Error | null) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
}): { write(text: string): void; finished(): Promise<Error | null> } {
  let failure: Error | null = null;
  let last = Promise.resolve();
  stream.on("error", (error) => (failure ??= error));
  const write = (text: string) =>
    new Promise<void>((resolve) => {
      const done = (error?: Error | null) => {
        failure ??= error ?? null;
        resolve();
      };
      try {
        stream.write(text, done);
      } catch (error) {
        done(error as Error);
      }
    });
  return {
    write(text) {
      if (failure === null) last = write(text); // else the reader is gone: nothing more can arrive
    },
    finished: () => last.then(() => failure),
  };
}
