/**
 * Output that is written whole before the process exits. `process.exit()` right after a large
 * `stdout.write` loses whatever a pipe has not taken yet (docs/RUNTIMES.md "Output to a pipe"), on Bun,
 * Deno and the compiled binary alike; so every write's completion is awaited, and a write that fails
 * (the reader went away: EPIPE) is remembered, so the command can exit non-zero instead of reporting
 * success over a partial output.
 */

/** The part of a process stream this needs. */
export interface WritableLike {
  write(text: string, callback: (error?: Error | null) => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
}

/** A stream whose writes can be awaited. */
export interface AwaitedOutput {
  /** Queues `text`; never throws. */
  write(text: string): void;
  /** Resolves when every write so far has completed: with the first failure, or null when all went through. */
  finished(): Promise<Error | null>;
}

/** Wraps a process stream (process.stdout / process.stderr). */
export function awaitedOutput(stream: WritableLike): AwaitedOutput {
  let failure: Error | null = null;
  let last: Promise<void> = Promise.resolve();
  stream.on("error", (error) => (failure ??= error));
  return {
    write(text) {
      if (failure !== null) return; // the reader is gone: nothing more can arrive
      last = new Promise<void>((resolve) => {
        try {
          stream.write(text, (error) => {
            if (error) failure ??= error;
            resolve();
          });
        } catch (error) {
          failure ??= error as Error;
          resolve();
        }
      });
    },
    async finished() {
      await last;
      return failure;
    },
  };
}
