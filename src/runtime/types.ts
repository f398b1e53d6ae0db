// What each runtime adapter implements: the app's fetch handed to Bun.serve or Deno.serve (docs/DESIGN.md "Map").

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
