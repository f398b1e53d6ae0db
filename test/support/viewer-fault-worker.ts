/**
 * The real viewer reader worker (src/viewer-worker.ts), made to die on cue: a search for
 * "die-on-cue" throws in its thread instead of answering. Everything else is the reader as a tap runs it.
 */
import "../../src/viewer-worker.ts";

type Handler = (event: MessageEvent<{ wc: string; name?: string; args?: unknown[] }>) => void;
const scope = globalThis as unknown as { onmessage: Handler | null };
const reader = scope.onmessage!;

scope.onmessage = (event) => {
  if (event.data.wc === "call" && event.data.name === "search" && event.data.args?.[0] === "die-on-cue") {
    throw new Error("the viewer's reader failed (cued by the test)");
  }
  reader(event);
};
