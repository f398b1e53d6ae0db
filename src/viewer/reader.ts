/**
 * Where the viewer's data is read (docs/DESIGN.md "Off the relay path"): listing, rendering, searching and
 * exporting read the whole mirror, work in proportion to the archive that must not run on the thread that
 * relays bytes. So a tap reads it in a Worker of its own (src/viewer-worker.ts, started the first time the
 * viewer is used) and the relay's thread only passes questions and answers; a test that injects a
 * filesystem reads it in this thread (a function cannot cross into a Worker), through the same interface.
 */
import type { LiveEvent } from "./api-json.ts";
import type { Answer, ExportAnswer } from "./deps.ts";
import { type PriceTable } from "../usage/prices.ts";
import { workerErrorLine } from "../utils/worker-error.ts";

/** The viewer's data, wherever it is read: ViewerData itself, or a Worker running it. */
export interface ViewerReader {
  sessions(): Promise<unknown[]>;
  session(query: string): Promise<Answer>;
  search(query: string): Promise<unknown>;
  exportSession(query: string, format: string): Promise<ExportAnswer>;
  restore(query: string, options: { dryRun: boolean; force: boolean }): Promise<Answer>;
  /** Hands `listener` each batch of new records from now on, until the function it resolves with is called. */
  subscribe(listener: (event: LiveEvent) => void): Promise<() => void>;
  /** A mirror file was just written (new records show at once, not at the next poll). */
  hint(path: string): void;
  close(): void;
}

/** What the reader's Worker is started with. */
export interface ReaderSettings {
  mirrorDir: string;
  claudeDir: string;
  pollMs: number;
  prices: PriceTable;
}

/** The questions the Worker answers: ViewerReader's methods, and following the tree for live records. */
export type ReaderQuestion = "sessions" | "session" | "search" | "exportSession" | "restore" | "subscribe" | "unsubscribe";

/** A message to the reader's Worker. */
export type ToReader =
  | { t: "start"; settings: ReaderSettings }
  | { t: "ask"; q: number; name: ReaderQuestion; args: unknown[] }
  | { t: "hint"; path: string };

/** A message from the reader's Worker. */
export type FromReader =
  | { t: "reply"; q: number; value?: unknown; error?: string }
  | { t: "records"; event: LiveEvent }
  | { t: "error"; error: string }
  | { t: "died"; error: string };

/** The viewer's data read in a Worker: started on first use, started again after it died. */
export class WorkerReader implements ViewerReader {
  private worker: Worker | null = null;
  private nextQuestion = 1;
  private readonly waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private readonly listeners = new Set<(event: LiveEvent) => void>();
  /** The Worker's watch of the tree, while anyone listens. */
  private watching: Promise<unknown> | null = null;
  private closed = false;

  constructor(
    private readonly url: URL | string,
    private readonly settings: ReaderSettings,
    private readonly onError: (error: unknown) => void,
  ) {}

  sessions = () => this.ask("sessions") as Promise<unknown[]>;
  session = (query: string) => this.ask("session", query) as Promise<Answer>;
  search = (query: string) => this.ask("search", query);
  exportSession = (query: string, format: string) => this.ask("exportSession", query, format) as Promise<ExportAnswer>;
  restore = (query: string, options: { dryRun: boolean; force: boolean }) => this.ask("restore", query, options) as Promise<Answer>;

  async subscribe(listener: (event: LiveEvent) => void): Promise<() => void> {
    this.listeners.add(listener);
    this.watching ??= this.ask("subscribe");
    await this.watching;
    return () => {
      if (!this.listeners.delete(listener) || this.listeners.size > 0) return;
      this.watching = null;
      this.ask("unsubscribe").catch(() => {}); // a Worker that stopped watches nothing
    };
  }

  hint(path: string): void {
    if (this.watching !== null) this.worker?.postMessage({ t: "hint", path } satisfies ToReader);
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
    this.stop("the tap is stopping");
  }

  private ask(name: ReaderQuestion, ...args: unknown[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error("the viewer is closed"));
    const worker = this.start();
    const q = this.nextQuestion++;
    return new Promise((resolve, reject) => {
      this.waiting.set(q, { resolve, reject });
      worker.postMessage({ t: "ask", q, name, args } satisfies ToReader);
    });
  }

  private start(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = (this.worker = new Worker(this.url, { type: "module" }));
    const died = (why: string) => {
      if (this.worker !== worker) return; // said already
      this.onError(new Error(`the viewer's reader stopped: ${why || "an error in its thread"}`));
      this.stop("its thread stopped");
    };
    worker.onmessage = (event: MessageEvent<FromReader>) => (event.data.t === "died" ? died(event.data.error) : this.receive(event.data));
    worker.onerror = (event: ErrorEvent) => {
      event.preventDefault?.();
      died(workerErrorLine(event.message ?? ""));
    };
    worker.postMessage({ t: "start", settings: this.settings } satisfies ToReader);
    // Live pages of a reader that died are followed again by the new one.
    if (this.listeners.size > 0) this.watching = this.ask("subscribe");
    return worker;
  }

  private receive(message: Exclude<FromReader, { t: "died" }>): void {
    if (message.t === "records") { for (const listener of [...this.listeners]) listener(message.event); }
    else if (message.t === "error") this.onError(new Error(message.error));
    else {
      const waiting = this.waiting.get(message.q);
      this.waiting.delete(message.q);
      if (message.error !== undefined) waiting?.reject(new Error(message.error));
      else waiting?.resolve(message.value);
    }
  }

  private stop(why: string): void {
    this.worker?.terminate();
    this.worker = null;
    this.watching = null;
    for (const { reject } of this.waiting.values()) reject(new Error(`the viewer's reader stopped: ${why}`));
    this.waiting.clear();
  }
}
