/** Picks the runtime adapter for the runtime we are on. */
import type { FetchHandler, ListenOptions, RunningServer } from "./types.ts";

/** "bun" or "deno": the runtime running this code. */
export function runtimeName(): "bun" | "deno" {
  return typeof (globalThis as { Bun?: unknown }).Bun !== "undefined" ? "bun" : "deno";
}

/**
 * True when a JavaScript stream handed to fetch goes upstream with the request's `content-length` (Bun);
 * Deno sends it chunked (docs/RUNTIMES.md "Request bodies").
 */
export function streamedBodyKeepsLength(): boolean {
  return runtimeName() === "bun";
}

/** `base` configured for upstream requests on this runtime (Bun needs its 300 s limit lifted; Deno nothing). */
export async function upstreamFetch(base: typeof fetch): Promise<typeof fetch> {
  if (runtimeName() === "bun") return (await import("./bun.ts")).bunFetch(base);
  return base;
}

/** Bundles the browser module `entry` with what it imports into one minified classic script (Bun's bundler, on either runtime). */
export async function bundleScript(entry: URL): Promise<string> {
  if (runtimeName() === "bun") return (await import("./bun.ts")).bunBundle(entry);
  return (await import("./deno.ts")).bunCliBundle(entry);
}

/** Starts listening with the current runtime's adapter. */
export async function listen(handler: FetchHandler, options: ListenOptions): Promise<RunningServer> {
  if (runtimeName() === "bun") return (await import("./bun.ts")).serveBun(handler, options);
  return (await import("./deno.ts")).serveDeno(handler, options);
}

/** The command-line arguments after the program (and script) name, on either runtime. */
export function commandArgs(): string[] {
  const deno = (globalThis as { Deno?: { args: string[] } }).Deno;
  return deno !== undefined ? [...deno.args] : process.argv.slice(2);
}
