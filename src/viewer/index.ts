// A tap's viewer: its data read in a Worker of its own (a test's filesystem: in this thread), its page: docs/DESIGN.md "The viewer".
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";
import { type Calls, WorkerCalls } from "../utils/worker-call.ts";
import { type GuardAlert, type LiveEvent, type ReaderNote, type ReaderSettings, ViewerData } from "./api.ts";
import { allowedHosts } from "./hosts.ts";
import { type Bundler, clientScript, viewerPage } from "./page.ts";
import type { ViewerDeps } from "./routes.ts";

export { allowedHosts, isLoopback } from "./hosts.ts";

export interface Viewer {
  deps: ViewerDeps;
  close(): void;
}

export function createViewer(options: {
  mirrorDir: string;
  claudeDir: string;
  host: string;
  version: string;
  onError: (error: unknown) => void;
  /** Bundles the page's browser client when this is not the compiled binary (runtime/'s bundleScript). */
  bundle: Bundler;
  /** A filesystem of the caller's own: the data is then read in this thread (with `clock`). */
  fs?: FsAdapter;
  clock?: () => number;
  /** The reader's Worker script (default: src/viewer-worker.ts; the binary passes its own). */
  workerUrl?: URL | string;
  pollMs?: number;
  guardAlert?: (sessionId: string) => GuardAlert | null;
  prices?: PriceTable;
  /** Exports replace secrets (SESSIONTAP_REDACT is not off); default true. */
  redact?: boolean;
  /** Called after a restore wrote a session's transcript (the guard looks at it at once). */
  restored?: (sessionId: string) => Promise<void>;
}): Viewer {
  const settings: ReaderSettings = {
    mirrorDir: options.mirrorDir,
    claudeDir: options.claudeDir,
    pollMs: options.pollMs ?? 1000,
    prices: options.prices ?? BUILTIN_PRICES,
    redact: options.redact ?? true,
  };
  const live = new Map<number, { dir: string; records(event: LiveEvent): void; end(): void }>();
  const tell = (note: ReaderNote) => {
    if ("error" in note) options.onError(new Error(note.error));
    else for (const l of live.values()) if (l.dir === note.records.dir) l.records(note.records);
  };
  let closed = false;
  let worker: WorkerCalls<ViewerData> | null = null;
  const died = (why: string) => {
    options.onError(new Error(`the viewer's reader stopped: ${why}`));
    for (const l of live.values()) l.end(); // the page follows again, and sees what it missed
  };
  const inThread = options.fs !== undefined ? new ViewerData(options.fs, settings, tell, options.clock) : null;
  const data: Calls<ViewerData> = inThread ?? new Proxy({} as Calls<ViewerData>, {
    get: (_, name: string) => (...args: unknown[]) => {
      if (closed) return Promise.reject(new Error("the viewer is closed"));
      // Started on first use, and again after it died.
      if (worker === null || worker.stopped !== null) {
        worker = new WorkerCalls(options.workerUrl ?? new URL("../viewer-worker.ts", import.meta.url), settings, {
          name: "the viewer's reader",
          died,
          message: (note) => tell(note as ReaderNote),
        });
      }
      return (worker.call as (name: string, ...args: unknown[]) => Promise<unknown>).apply(worker, [name, ...args]);
    },
  });
  const stopping = new AbortController();
  let nextFollow = 1;
  return {
    close: () => {
      closed = true;
      stopping.abort();
      void inThread?.close();
      worker?.close("the tap is stopping");
    },
    deps: {
      allowedHosts: allowedHosts(options.host),
      page: async (nonce) => viewerPage(nonce, options.version, await clientScript(options.bundle)),
      data,
      guardAlert: options.guardAlert ?? (() => null),
      restored: options.restored ?? (async () => {}),
      follow: async (dir, listener) => {
        const id = nextFollow++;
        live.set(id, { dir, ...listener });
        const bytes = await data.follow(id, dir).catch((error) => {
          live.delete(id);
          throw error;
        });
        const stop = () => {
          if (live.delete(id) && !closed) data.unfollow(id).catch(options.onError);
        };
        return { bytes, stop };
      },
      stopped: stopping.signal,
    },
  };
}
