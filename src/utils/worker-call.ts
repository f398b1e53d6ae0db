// Calling into a Worker by method name (docs/DESIGN.md "Off the relay path").
import { describe } from "./describe-error.ts";

type Fn = (...args: never[]) => unknown;
type Promised<F> = F extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;
/** `Api`'s methods as another thread calls them: the same arguments, the result as a promise; PathCalls also "mirror.flush". */
export type Calls<Api> = { [K in keyof Api]: Promised<Api[K]> };
type Methods<T> = { [M in keyof T & string]: T[M] extends Fn ? M : never }[keyof T & string];
type Path<Api> = { [K in keyof Api & string]: Api[K] extends Fn ? K : `${K}.${Methods<NonNullable<Api[K]>>}` }[keyof Api & string];
type At<Api, P> = P extends `${infer K extends keyof Api & string}.${infer M}` ? NonNullable<Api[K]>[M & keyof NonNullable<Api[K]>] : Api[P & keyof Api];
export type PathCalls<Api> = { [P in Path<Api>]: Promised<At<Api, P>> };

/** What `name` (a method, or "field.method") answers on `api`. */
export function callByName(api: object, name: string, args: unknown[]): unknown {
  const dot = name.indexOf(".");
  const target = (dot < 0 ? api : (api as Record<string, unknown>)[name.slice(0, dot)]) as Record<string, unknown> | null;
  const method = target?.[name.slice(dot + 1)];
  if (typeof method !== "function") throw new Error(`no call named ${name}`);
  return method.apply(target, args);
}

// Bun puts the source excerpt and the stack around a Worker's error message; health and stderr take one line.
export function workerErrorLine(message: string): string {
  const lines = message.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const named = lines.find((l) => /^(?:Uncaught )?(?:error|[A-Za-z]*Error): /.test(l));
  return (named ?? lines[0] ?? "").replace(/^Uncaught /, "");
}

type Wire =
  | { wc: "init"; init: unknown }
  | { wc: "call"; id: number; name: string; args: unknown[] }
  | { wc: "reply"; id: number; value?: unknown; error?: string }
  | { wc: "died"; why: string };

/** The caller's end of a Worker whose first message is `init`; once it dies, `died` hears why once and every call rejects. */
export class WorkerCalls<Api> {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private next = 1;
  stopped: string | null = null;

  constructor(
    url: URL | string,
    init: unknown,
    private readonly on: { name: string; died(why: string): void; message?(data: unknown): void },
    transfer: Transferable[] = [],
  ) {
    const worker = (this.worker = new Worker(url, { type: "module" }));
    worker.onmessage = (event: MessageEvent) => {
      const m = event.data as Wire | null;
      if (m?.wc === "reply") {
        const waiting = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.error !== undefined) waiting?.reject(new Error(m.error));
        else waiting?.resolve(m.value);
      } else if (m?.wc === "died") this.close(m.why, true);
      else on.message?.(event.data);
    };
    worker.onerror = (event: ErrorEvent) => {
      event.preventDefault?.();
      this.close(workerErrorLine(event.message ?? "") || "an error in its thread", true);
    };
    worker.onmessageerror = () => this.close("a message could not be read", true);
    worker.postMessage({ wc: "init", init } satisfies Wire, transfer);
  }

  call<K extends keyof PathCalls<Api> & string>(name: K, ...args: Parameters<PathCalls<Api>[K]>): ReturnType<PathCalls<Api>[K]> {
    if (this.stopped !== null) return Promise.reject(new Error(`${this.on.name} stopped: ${this.stopped}`)) as ReturnType<PathCalls<Api>[K]>;
    const id = this.next++;
    const reply = new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    this.worker.postMessage({ wc: "call", id, name, args } satisfies Wire);
    return reply as ReturnType<PathCalls<Api>[K]>;
  }

  post(message: unknown, transfer: Transferable[] = []): void {
    if (this.stopped === null) this.worker.postMessage(message, transfer);
  }

  /** What waits rejects; `died` is told only when the thread `died`. */
  close(why = "it was closed", died = false): void {
    if (this.stopped !== null) return;
    this.stopped = why;
    this.worker.terminate();
    for (const { reject } of this.waiting.values()) reject(new Error(`${this.on.name} stopped: ${why}`));
    this.waiting.clear();
    if (died) this.on.died(why);
  }
}

const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent) => void) | null;
  postMessage(message: unknown, transfer?: Transferable[]): void;
  addEventListener(type: "error" | "unhandledrejection", listener: (event: Event & { error?: unknown; reason?: unknown; message?: string }) => void): void;
  close(): void;
};

// The Worker's end: calls go to the object built from the first message; an error nothing contained ends the thread, said once in
// one line (not the runtime's multi-line report). Returns how to post to the caller.
export function answerCalls(
  build: (init: never) => object | Promise<object>,
  message?: (data: unknown) => void,
): (data: unknown, transfer?: Transferable[]) => void {
  const post = (data: unknown, transfer: Transferable[] = []) => scope.postMessage(data, transfer);
  let api: Promise<object> = new Promise(() => {});
  scope.onmessage = (event) => {
    const m = event.data as Wire | null;
    if (m?.wc === "init") api = Promise.resolve(m.init as never).then(build);
    else if (m?.wc === "call") {
      const { id, name, args } = m;
      api.then((target) => callByName(target, name, args)).then(
        (value) => post({ wc: "reply", id, value } satisfies Wire),
        (error) => post({ wc: "reply", id, error: (error instanceof Error ? error.message : String(error)).split("\n")[0] } satisfies Wire),
      );
    } else message?.(event.data);
  };
  let died = false;
  const die = (event: Event, error: unknown) => {
    event.preventDefault();
    if (died) return;
    died = true;
    post({ wc: "died", why: `an error the thread did not contain: ${describe(error)}` } satisfies Wire);
    scope.close();
  };
  scope.addEventListener("error", (event) => die(event, event.error ?? event.message));
  scope.addEventListener("unhandledrejection", (event) => die(event, event.reason));
  return post;
}
