// The mirror engine's thread (docs/DESIGN.md "Off the relay path"): built from the first message, it takes the relay's messages and calls.
import { MirrorEngine } from "./mirror/engine.ts";
import type { EngineStart, ToEngine } from "./mirror/messages.ts";
import { type FsAdapter, nodeFs } from "./storage/fs-adapter.ts";
import { answerCalls } from "./utils/worker-call.ts";

const scope = globalThis as unknown as { setImmediate(fn: (...args: unknown[]) => void, ...args: unknown[]): unknown };

let engine: MirrorEngine | null = null;

// Nothing but calls arrives before the engine started: the relay posts nothing until then.
const post = answerCalls(async ({ settings, seams }: EngineStart) => {
  const own: { fs?: FsAdapter; clock?: () => number } = seams === undefined ? {} : await (await import(seams.module))[seams.name](seams.port);
  return (engine = new MirrorEngine(settings, { fs: own.fs ?? nodeFs, clock: own.clock ?? Date.now, post: (message) => post(message) }));
}, (message) => engine!.receive(message as ToEngine));

// The store's client (postgres.js) throws from a setImmediate, out of reach of any await, when its socket closed mid-transaction
// (porsager/postgres#1208). The engine schedules no immediate of its own: such a throw replaces the client and the engine lives.
const immediate = scope.setImmediate.bind(scope);
scope.setImmediate = (fn, ...args) =>
  immediate(() => {
    try {
      fn(...args);
    } catch (error) {
      if (engine?.store == null) throw error;
      engine.store.driverFailed(error);
    }
  });
