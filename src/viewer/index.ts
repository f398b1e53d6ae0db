/**
 * Wires the viewer for a tap: where its data is read (its own Worker, or this thread for a test that
 * injects a filesystem: reader.ts), the guard's alerts on each session, the page, and who may reach it
 * (loopback names only while the tap listens on loopback).
 */
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { BUILTIN_PRICES, type PriceTable } from "../usage/prices.ts";
import { orAfter } from "../utils/within.ts";
import type { GuardAlert, SessionView, ViewerSession } from "./api-json.ts";
import { ViewerData } from "./api.ts";
import { type Bundler, clientScript } from "./client-script.ts";
import type { ViewerDeps } from "./deps.ts";
import { allowedHosts } from "./hosts.ts";
import { LiveWatcher } from "./live.ts";
import { viewerPage } from "./page.ts";
import { type ViewerReader, WorkerReader } from "./reader.ts";

export { allowedHosts, isLoopback } from "./hosts.ts";

/** What the viewer shows of the guard's alert on a session: null when there is none (or no guard). */
export type GuardAlertOf = (sessionId: string) => GuardAlert | null;

/** The longest a restore's answer waits for the guard to look at the restored transcript. */
const RESTORED_LOOK_MS = 1_000;

/** A viewer ready to hand to createApp, and what the tap tells it and closes. */
export interface Viewer {
  deps: ViewerDeps;
  /** A mirror file was just written (the engine says which): new records show at once. */
  hint(path: string): void;
  close(): void;
}

/** Builds the viewer over `mirrorDir` for a tap listening on `host`. */
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
  /** The reader's Worker script (default: src/viewer-worker.ts next to this source; the binary passes its own). */
  workerUrl?: URL | string;
  pollMs?: number;
  /** The guard's alert for a session (a banner on it), when a guard runs. */
  guardAlert?: GuardAlertOf;
  prices?: PriceTable;
  /** Called after a restore wrote a session's transcript (the guard looks at it at once). */
  restored?: (sessionId: string) => Promise<void>;
}): Viewer {
  const pollMs = options.pollMs ?? 2000;
  const prices = options.prices ?? BUILTIN_PRICES;
  const reader: ViewerReader = options.fs !== undefined
    ? new ViewerData(options.fs, options.mirrorDir, options.claudeDir, new LiveWatcher(options.fs, options.mirrorDir, pollMs, options.onError), {
      prices,
      clock: options.clock,
    })
    : new WorkerReader(
      options.workerUrl ?? new URL("../viewer-worker.ts", import.meta.url),
      { mirrorDir: options.mirrorDir, claudeDir: options.claudeDir, pollMs, prices },
      options.onError,
    );
  const alertOf = options.guardAlert ?? (() => null);
  const withAlert = (s: ViewerSession): ViewerSession => ({ ...s, guard: s.sessionId === null ? null : alertOf(s.sessionId) });
  const stopping = new AbortController();
  return {
    hint: (path) => reader.hint(path),
    close: () => {
      stopping.abort();
      reader.close();
    },
    deps: {
      allowedHosts: allowedHosts(options.host),
      page: async (nonce) => viewerPage(nonce, options.version, await clientScript(options.bundle)),
      sessions: async () => ((await reader.sessions()) as ViewerSession[]).map(withAlert),
      session: async (id) => {
        const answer = await reader.session(id);
        if (answer.status !== 200) return answer;
        const view = answer.body as SessionView;
        return { status: 200, body: { ...view, session: withAlert(view.session) } satisfies SessionView };
      },
      search: (query) => reader.search(query),
      exportSession: (id, format) => reader.exportSession(id, format),
      restore: async (id, restore) => {
        const answer = await reader.restore(id, restore);
        // The page the client reloads next shows the state after the restore: the guard has looked (bounded).
        const done = answer.body as { ok?: boolean; outcome?: { sessionId: string } };
        if (!restore.dryRun && done.ok === true && done.outcome && options.restored) {
          await orAfter(options.restored(done.outcome.sessionId), RESTORED_LOOK_MS, null);
        }
        return answer;
      },
      subscribe: (listener) => reader.subscribe(listener),
      stopped: stopping.signal,
    },
  };
}
