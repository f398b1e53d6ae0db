// Where the mirror engine runs (docs/DESIGN.md "Where the engine runs"): in a Worker, off the relay's thread, or in this thread for
// the launcher's fallback tap only; both speak the same messages in the same order.
import { MirrorEngine } from "../mirror/engine.ts";
import type { EngineSeams, EngineSettings, EngineStart, FromEngine, ToEngine } from "../mirror/messages.ts";
import { nodeFs } from "../storage/fs-adapter.ts";
import { describe, workerErrorLine } from "../utils/describe-error.ts";
import { type EngineHost, EngineLink, type LinkListener, type StartedEngine } from "./engine-link.ts";

export { workerErrorLine };
export type { StartedEngine };

/** Rejects when it cannot start; once it ran, a Worker that dies is replaced (a test's seams go to the first only: a port is sent once). */
export function startWorkerEngine(workerUrl: URL | string, settings: EngineSettings, listener: LinkListener, seams?: EngineSeams): Promise<StartedEngine> {
  return new EngineLink(listener, (link, first) => {
    const worker = new Worker(workerUrl, { type: "module" });
    const host: EngineHost = { post: (message, transfer) => worker.postMessage(message, transfer), close: () => worker.terminate() };
    worker.onmessage = (event: MessageEvent<FromEngine>) => link.receive(event.data, host);
    worker.onerror = (event: ErrorEvent) => {
      event.preventDefault?.();
      link.fail(workerErrorLine(event.message) || "an error in its thread", host);
    };
    worker.onmessageerror = () => link.fail("a message could not be read", host);
    const own = first ? seams : undefined;
    worker.postMessage({ t: "start", settings, seams: own } satisfies EngineStart, own === undefined ? [] : [own.port]);
    return host;
  }).started;
}

/** Messages still go through a turn of the event loop, as a Worker's do; it is not started again: its death is the process's. */
export function startThreadEngine(settings: EngineSettings, listener: LinkListener): Promise<StartedEngine> {
  return new EngineLink(listener, (link) => {
    const engine = new MirrorEngine(settings, { fs: nodeFs, clock: Date.now, post: (message) => queueMicrotask(() => link.receive(message)) });
    engine.start().then(
      ({ replayed, guard }) => link.receive({ t: "ready", replayed, guard }),
      (error) => link.receive({ t: "failed", error: describe(error) }),
    );
    return { post: (message: ToEngine) => queueMicrotask(() => engine.receive(message)), close: () => {} };
  }, false).started;
}
