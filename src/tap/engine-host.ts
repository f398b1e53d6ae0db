// Where the mirror engine runs (docs/DESIGN.md "Where the engine runs"): in a Worker, off the relay's thread, or in this thread for
// the launcher's fallback tap only; both take the same messages and calls in the same order.
import { MirrorEngine } from "../mirror/engine.ts";
import type { EngineSeams, EngineSettings, EngineStart, FromEngine, ToEngine } from "../mirror/messages.ts";
import { nodeFs } from "../storage/fs-adapter.ts";
import { WorkerCalls } from "../utils/worker-call.ts";
import { type EngineHost, EngineLink, type LinkListener, type StartedEngine } from "./engine-link.ts";

/** Rejects when it cannot start; once it ran, a Worker that dies is replaced (a test's seams go to the first only: a port is sent once). */
export function startWorkerEngine(workerUrl: URL | string, settings: EngineSettings, listener: LinkListener, seams?: EngineSeams): Promise<StartedEngine> {
  return new EngineLink(listener, (link, first) => {
    const own = first ? seams : undefined;
    const host: EngineHost = new WorkerCalls<MirrorEngine>(workerUrl, { settings, seams: own } satisfies EngineStart, {
      name: "the mirror engine",
      died: (why) => link.fail(why, host),
      message: (data) => link.receive(data as FromEngine, host),
    }, own === undefined ? [] : [own.port]);
    return host;
  }).started;
}

/** Messages and calls still go through a turn of the event loop, as a Worker's do; its death is the process's. */
export function startThreadEngine(settings: EngineSettings, listener: LinkListener): Promise<StartedEngine> {
  return new EngineLink(listener, (link) => {
    const engine = new MirrorEngine(settings, { fs: nodeFs, clock: Date.now, post: (message) => queueMicrotask(() => link.receive(message)) });
    const call = (name: string, ...args: unknown[]) =>
      Promise.resolve().then(() => (engine[name as "stop"] as (...a: unknown[]) => unknown).apply(engine, args));
    return { post: (message) => queueMicrotask(() => engine.receive(message as ToEngine)), call: call as EngineHost["call"], close: () => {} };
  }, false).started;
}
