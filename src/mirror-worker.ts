// The mirror engine's thread (docs/DESIGN.md "Off the relay path"): a Web Worker, started by the serve command with this file's URL, that builds the engine
// from the first message and hands it every message after.
import { MirrorEngine } from "./mirror/engine.ts";
import type { EngineSeams, EngineStart, FromEngine, ToEngine } from "./mirror/messages.ts";
import { describe } from "./utils/describe-error.ts";
import { type FsAdapter, nodeFs } from "./storage/fs-adapter.ts";

/** The worker's own global, as far as this file uses it. */
const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<EngineStart | ToEngine>) => void) | null;
  postMessage(message: FromEngine): void;
  addEventListener(type: "error" | "unhandledrejection", listener: (event: Event & { error?: unknown; reason?: unknown; message?: string }) => void): void;
  close(): void;
  setImmediate(fn: (...args: unknown[]) => void, ...args: unknown[]): unknown;
};

let engine: MirrorEngine | null = null;
const post = (message: FromEngine) => scope.postMessage(message);

/** The filesystem and clock of a test's module, else this thread's own. */
async function seamsOf(seams: EngineSeams | undefined): Promise<{ fs: FsAdapter; clock: () => number }> {
  const own = seams === undefined ? {} : await (await import(seams.module))[seams.name](seams.port);
  return { fs: own.fs ?? nodeFs, clock: own.clock ?? Date.now };
}

// Nothing else arrives before the engine is ready: the relay has no link to it until then.
scope.onmessage = (event) => {
  const message = event.data;
  if (engine !== null) return engine.receive(message as ToEngine);
  if (message.t === "start") void start(message);
};

/** Builds and starts the engine; says ready, or why it could not start. */
async function start(message: EngineStart): Promise<void> {
  try {
    const started = (engine = new MirrorEngine(message.settings, { ...(await seamsOf(message.seams)), post }));
    const { replayed, guard } = await started.start();
    post({ t: "ready", replayed, guard });
  } catch (error) {
    post({ t: "failed", error: describe(error) });
  }
}

// An error nothing in the engine contained ends it: said as one line (the relay's link reports it once, on
// stderr and in health), and the thread closes, so nothing runs on in a state no one can vouch for.
// Without this the runtime prints its own multi-line report (Deno) or hands the parent the error's source
// excerpt (Bun).
let died = false;
const die = (event: Event & { preventDefault(): void }, error: unknown) => {
  event.preventDefault();
  if (died) return;
  died = true;
  post({ t: "failed", error: `an error the engine did not contain: ${describe(error)}` });
  scope.close();
};
scope.addEventListener("error", (event) => die(event, event.error ?? event.message));

// The store's client (postgres.js) coalesces writes in a setImmediate and throws there, out of reach of any await, when
// its socket closed mid-transaction (porsager/postgres#1208; Bun and Deno alike). The engine schedules no immediate of its
// own, so a throw from one is the client's: it is replaced and the engine lives. Any other error ends the thread above.
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
scope.addEventListener("unhandledrejection", (event) => die(event, event.reason));
