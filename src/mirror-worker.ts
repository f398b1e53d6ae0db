/**
 * The mirror engine's thread (docs/DESIGN.md "Off the relay path"): a Web Worker, started by the serve
 * command with this file's URL, that builds the engine from the first message and hands it every message
 * after. The filesystem and the clock are this thread's own; everything it says goes back as a message.
 */
import { MirrorEngine } from "./mirror/engine.ts";
import type { EngineStart, FromEngine, ToEngine } from "./mirror/messages.ts";
import { describe } from "./storage/events-log.ts";
import { nodeFs } from "./storage/fs-adapter.ts";

/** The worker's own global, as far as this file uses it. */
const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<EngineStart | ToEngine>) => void) | null;
  postMessage(message: FromEngine): void;
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
