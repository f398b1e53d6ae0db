/**
 * The mirror engine's thread (docs/DESIGN.md "Off the relay path"): a Web Worker, started by the serve
 * command with this file's URL, that builds the engine from the first message and hands it every message
 * after. The filesystem and the clock are this thread's own; everything it says goes back as a message.
 */
import { MirrorEngine } from "./mirror/engine.ts";
import type { EngineStart, FromEngine, ToEngine } from "./mirror/messages.ts";
import { describe } from "./utils/describe-error.ts";
import { nodeFs } from "./storage/fs-adapter.ts";

/** The worker's own global, as far as this file uses it. */
const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<EngineStart | ToEngine>) => void) | null;
  postMessage(message: FromEngine): void;
  addEventListener(type: "error" | "unhandledrejection", listener: (event: Event & { error?: unknown; reason?: unknown; message?: string }) => void): void;
  close(): void;
};

let engine: MirrorEngine | null = null;
const post = (message: FromEngine) => scope.postMessage(message);

scope.onmessage = (event) => {
  const message = event.data;
  if (engine !== null) return engine.receive(message as ToEngine);
  if (message.t !== "start") return;
  try {
    const started = (engine = new MirrorEngine(message.settings, { fs: nodeFs, clock: Date.now, post }));
    started.start().then(
      ({ replayed, guard }) => post({ t: "ready", replayed, guard }),
      (error) => post({ t: "failed", error: describe(error) }),
    );
  } catch (error) {
    post({ t: "failed", error: describe(error) });
  }
};

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
scope.addEventListener("unhandledrejection", (event) => die(event, event.reason));
