/**
 * Where the mirror engine runs (docs/DESIGN.md "Where the engine runs"): in a Worker, so that nothing it
 * does runs on the thread that relays bytes (a test's own filesystem goes in as a module the Worker
 * imports) — or in this thread, for the launcher's fallback tap only. Both speak the same messages in the
 * same order; only the thread differs.
 */
import { MirrorEngine } from "../mirror/engine.ts";
import type { EngineSeams, EngineSettings, EngineStart, FromEngine, ToEngine } from "../mirror/messages.ts";
import type { Replayed } from "../mirror/mirror.ts";
import { nodeFs } from "../storage/fs-adapter.ts";
import { workerErrorLine } from "../utils/describe-error.ts";
import { EngineLink, type LinkListener } from "./engine-link.ts";

export { workerErrorLine };

/** A running engine: the link the relay uses, and what the engine found at start. */
export interface StartedEngine {
  link: EngineLink;
  replayed: Replayed;
  /** True when the guard runs. */
  guard: boolean;
}

/** Starts the engine in a Worker running `workerUrl` (src/mirror-worker.ts); rejects when it cannot start. */
export function startWorkerEngine(workerUrl: URL | string, settings: EngineSettings, listener: LinkListener, seams?: EngineSeams): Promise<StartedEngine> {
  const worker = new Worker(workerUrl, { type: "module" });
  const link = new EngineLink(
    {
      post: (message, transfer) => worker.postMessage(message, transfer),
      close: () => worker.terminate(),
    },
    listener,
  );
  return new Promise((resolve, reject) => {
    let ready = false;
    worker.onmessage = (event: MessageEvent<FromEngine>) => {
      const message = event.data;
      if (!ready) {
        if (message.t === "ready") {
          ready = true;
          resolve({ link, replayed: message.replayed, guard: message.guard });
        } else if (message.t === "failed") {
          worker.terminate();
          reject(new Error(`the mirror engine could not start: ${message.error}`));
        } else link.receive(message);
        return;
      }
      link.receive(message);
    };
    worker.onerror = (event: ErrorEvent) => {
      event.preventDefault?.();
      const why = workerErrorLine(event.message) || "an error in its thread";
      if (!ready) {
        worker.terminate();
        reject(new Error(`the mirror engine could not start: ${why}`));
      } else link.fail(why);
    };
    worker.onmessageerror = () => link.fail("a message could not be read");
    const start: EngineStart = { t: "start", settings, seams };
    worker.postMessage(start, seams === undefined ? [] : [seams.port]);
  });
}

/**
 * Starts the engine in this thread (the launcher's fallback tap: docs/DESIGN.md "The launcher"); messages
 * still go through a turn of the event loop, as a Worker's do.
 */
export async function startThreadEngine(settings: EngineSettings, listener: LinkListener): Promise<StartedEngine> {
  let link: EngineLink | null = null;
  const toRelay: FromEngine[] = [];
  const engine = new MirrorEngine(settings, {
    fs: nodeFs,
    clock: Date.now,
    post: (message) => {
      if (link === null) toRelay.push(message);
      else queueMicrotask(() => link!.receive(message));
    },
  });
  link = new EngineLink(
    {
      post: (message: ToEngine) => queueMicrotask(() => engine.receive(message)),
      close: () => {},
    },
    listener,
  );
  for (const message of toRelay.splice(0)) link.receive(message);
  const { replayed, guard } = await engine.start();
  return { link, replayed, guard };
}
