/**
 * A test double of the filesystem (and clock) for the engine in its Worker, as serve runs it (docs/DESIGN.md
 * "Where the engine runs"): the double's module is imported in the Worker, builds the double there, and obeys
 * its controls through a MessagePort. A control resolves, with what it returned, once the Worker has applied
 * it, so a fault cued before a request is the one that request's writes meet.
 */
import type { EngineSeams } from "../../src/mirror/messages.ts";
import type { FsAdapter } from "../../src/storage/fs-adapter.ts";

/** A double: the adapter, maybe a clock, and controls that take and return plain data. */
export interface Double {
  fs: FsAdapter;
  clock?: () => number;
}

/** A double's controls as the test holds them: each a promise of what it returned in the Worker. */
export type Remote<D> = { [P in Exclude<keyof D, keyof Double>]: D[P] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never };

/** The Worker's side of a double: what a double module exports, for EngineSeams to name. */
export function served(build: () => Double): (port: MessagePort) => Double {
  return (port) => {
    const double = build() as Double & Record<string, (...args: unknown[]) => unknown>;
    port.onmessage = async ({ data: { id, control, args } }: MessageEvent<{ id: number; control: string; args: unknown[] }>) => {
      try {
        port.postMessage({ id, value: await double[control](...args) });
      } catch (error) {
        port.postMessage({ id, error: String(error) });
      }
    };
    return double;
  };
}

/**
 * The test's side: the seams to start one tap's engine with (TapDeps.engineSeams), and the controls of the
 * double that `moduleUrl` exports as `name` (made by `served`), which that engine builds.
 */
export function inEngine<D>(moduleUrl: string, name: string, controls: Exclude<keyof D & string, keyof Double>[]): Remote<D> & { seams: EngineSeams } {
  const { port1, port2 } = new MessageChannel();
  const waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  let next = 0;
  port1.onmessage = ({ data }: MessageEvent<{ id: number; value?: unknown; error?: string }>) => {
    const call = waiting.get(data.id)!;
    waiting.delete(data.id);
    if (data.error === undefined) call.resolve(data.value);
    else call.reject(new Error(`the engine's double: ${data.error}`));
  };
  const remote = Object.fromEntries(controls.map((control) => [
    control,
    (...args: unknown[]) =>
      new Promise((resolve, reject) => {
        waiting.set(++next, { resolve, reject });
        port1.postMessage({ id: next, control, args });
      }),
  ]));
  return { ...remote, seams: { module: moduleUrl, name, port: port2 } } as Remote<D> & { seams: EngineSeams };
}
