/** The small interface each runtime adapter implements (Hono/srvx style). */

/** A request handler in the Web-standard shape, told the client's address (`peer`: "unknown" when the runtime cannot say). */
export type FetchHandler = (request: Request, peer: string) => Response | Promise<Response>;

/** A server that is listening. */
export interface RunningServer {
  /** The port actually bound (meaningful with port 0). */
  port: number;
  /** "bun" or "deno". */
  runtime: "bun" | "deno";
  /**
   * Stops accepting; resolves when in-flight responses ended or `drainMs` passed (then they are cut).
   * `closed` is called once the port refuses new connections (before the drain ends).
   */
  stop(drainMs: number, closed?: () => void): Promise<void>;
}

/** Where to listen. */
export interface ListenOptions {
  port: number;
  hostname: string;
  onError: (error: unknown) => void;
  /**
   * Aborted by `stop` when the drain bound passes with requests still in flight, for a runtime that cannot
   * cut them itself (Deno): the handler ties each upstream fetch to it, which ends the response.
   */
  cut: AbortController;
}
