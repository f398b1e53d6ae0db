/** The small interface each runtime adapter implements (Hono/srvx style). */

/** A request handler in the Web-standard shape. */
export type FetchHandler = (request: Request) => Response | Promise<Response>;

/** A server that is listening. */
export interface RunningServer {
  /** The port actually bound (meaningful with port 0). */
  port: number;
  /** "bun" or "deno". */
  runtime: "bun" | "deno";
  /** Stops accepting; resolves when in-flight responses ended or `drainMs` passed (then they are cut). */
  stop(drainMs: number): Promise<void>;
}

/** Where to listen. */
export interface ListenOptions {
  port: number;
  hostname: string;
  onError: (error: unknown) => void;
}
