/**
 * The real mirror worker (src/mirror-worker.ts), with the engine's thread made to fail on cue: a test
 * writes `engine-cue.json` beside the mirror root, and the next health query meets it. `{"stallMs": N}`
 * blocks the thread for N ms (a busy or stuck engine); `{"crash": true}` throws in it (an engine that dies).
 * The cue is consumed once. Everything else is the engine as `serve` runs it.
 */
import { readFileSync, rmSync } from "node:fs";
import "../../src/mirror-worker.ts";

type Handler = (event: MessageEvent<{ wc: string; name?: string; init?: { settings: { mirrorDir: string } } }>) => void;
const scope = globalThis as unknown as { onmessage: Handler | null };
const engine = scope.onmessage!;
let cueFile = "";

scope.onmessage = (event) => {
  const message = event.data;
  if (message.wc === "init") cueFile = `${message.init!.settings.mirrorDir}/../engine-cue.json`;
  if (message.wc === "call" && message.name === "health") {
    let cue: { stallMs?: number; crash?: boolean } = {};
    try {
      cue = JSON.parse(readFileSync(cueFile, "utf8"));
      rmSync(cueFile);
    } catch {
      // no cue: the engine answers as usual
    }
    if (cue.crash) throw new Error("the engine's thread failed (cued by the test)");
    if (cue.stallMs) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, cue.stallMs);
  }
  engine(event);
};
