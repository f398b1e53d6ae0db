/**
 * Wires the viewer for a tap: the watcher of new records, the data behind `/_tap/api/…`, the page, and
 * who may reach it (loopback names only while the tap listens on loopback).
 */
import type { ViewerDeps } from "./deps.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import type { PriceTable } from "../usage/prices.ts";
import { type GuardAlertOf, ViewerData } from "./api.ts";
import { type Bundler, clientScript } from "./client-script.ts";
import { LiveWatcher } from "./live.ts";
import { allowedHosts } from "./hosts.ts";
import { viewerPage } from "./page.ts";

export { allowedHosts, isLoopback } from "./hosts.ts";

/** A viewer ready to hand to createApp, and what stopping the tap must close. */
export interface Viewer {
  deps: ViewerDeps;
  watcher: LiveWatcher;
  close(): void;
}

/** Builds the viewer over `mirrorDir` for a tap listening on `host`. */
export function createViewer(options: {
  fs: FsAdapter;
  mirrorDir: string;
  claudeDir: string;
  host: string;
  version: string;
  onError: (error: unknown) => void;
  pollMs?: number;
  /** The guard's alert for a session (a banner on it), when a guard runs. */
  guardAlert?: GuardAlertOf;
  prices?: PriceTable;
  clock?: () => number;
  /** The watcher of new records, when the tap built it first (its writes hint it). */
  watcher?: LiveWatcher;
  /** Bundles the page's browser client when this is not the compiled binary (runtime/'s bundleScript). */
  bundle: Bundler;
  /** Called after a restore wrote a session's transcript (the guard looks at it at once). */
  restored?: (sessionId: string) => Promise<void>;
}): Viewer {
  const watcher = options.watcher ?? new LiveWatcher(options.fs, options.mirrorDir, options.pollMs ?? 2000, options.onError);
  const data = new ViewerData(options.fs, options.mirrorDir, options.claudeDir, watcher, {
    guardAlert: options.guardAlert,
    prices: options.prices,
    clock: options.clock,
    restored: options.restored,
  });
  return {
    watcher,
    close: () => data.close(),
    deps: {
      allowedHosts: allowedHosts(options.host),
      page: async (nonce) => viewerPage(nonce, options.version, await clientScript(options.bundle)),
      sessions: () => data.sessions(),
      session: (id) => data.session(id),
      search: (query) => data.search(query),
      exportSession: (id, format) => data.exportSession(id, format),
      restore: (id, opts) => data.restore(id, opts),
      subscribe: (listener) => data.subscribe(listener),
      stopped: data.stopped,
    },
  };
}
