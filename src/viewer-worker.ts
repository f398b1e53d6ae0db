/**
 * The viewer's reader thread (docs/DESIGN.md "Off the relay path"): a Web Worker the tap starts the first
 * time the viewer is used (src/viewer/reader.ts), which reads, renders and searches the mirror so that
 * none of it runs on the thread that relays bytes. Built from the first message; every later message is a
 * question it answers, or a hint that a mirror file was written. Read-only, except a restore into Claude
 * Code's projects directory.
 */
import { nodeFs } from "./storage/fs-adapter.ts";
import { ViewerData } from "./viewer/api.ts";
import { LiveWatcher } from "./viewer/live.ts";
import type { FromReader, ToReader } from "./viewer/reader.ts";

/** The worker's own global, as far as this file uses it. */
const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<ToReader>) => void) | null;
  postMessage(message: FromReader): void;
  addEventListener(type: "error" | "unhandledrejection", listener: (event: Event & { error?: unknown; reason?: unknown; message?: string }) => void): void;
  close(): void;
};
const post = (message: FromReader) => scope.postMessage(message);
const line = (error: unknown) => (error instanceof Error ? error.message.split("\n")[0] : String(error));

let data: ViewerData | null = null;
let unsubscribe: (() => void) | null = null;
/** Following the tree starts and stops in the order it was asked for. */
let following: Promise<unknown> = Promise.resolve();

/** Answers one question. */
function answer(data: ViewerData, name: Extract<ToReader, { t: "ask" }>["name"], args: unknown[]): Promise<unknown> {
  switch (name) {
    case "sessions":
      return data.sessions();
    case "session":
      return data.session(String(args[0]));
    case "search":
      return data.search(String(args[0]));
    case "exportSession":
      return data.exportSession(String(args[0]), String(args[1]));
    case "restore":
      return data.restore(String(args[0]), args[1] as { dryRun: boolean; force: boolean });
    case "subscribe":
      return following = following.catch(() => {}).then(async () => {
        unsubscribe ??= await data.subscribe((event) => post({ t: "records", event }));
      });
    case "unsubscribe":
      return following = following.catch(() => {}).then(() => {
        unsubscribe?.();
        unsubscribe = null;
      });
  }
}

scope.onmessage = (event) => {
  const message = event.data;
  if (message.t === "start") {
    const s = message.settings;
    const watcher = new LiveWatcher(nodeFs, s.mirrorDir, s.pollMs, (error) => post({ t: "error", error: line(error) }));
    data = new ViewerData(nodeFs, s.mirrorDir, s.claudeDir, watcher, { prices: s.prices });
  } else if (message.t === "hint") data?.hint(message.path);
  else if (data !== null) {
    const q = message.q;
    answer(data, message.name, message.args).then((value) => post({ t: "reply", q, value }), (error) => post({ t: "reply", q, error: line(error) }));
  }
};

// An error nothing here contained ends the reader: said as one line (the tap starts another on its next
// question), instead of the runtime's own multi-line report.
const die = (event: Event, error: unknown) => {
  event.preventDefault();
  post({ t: "died", error: line(error) });
  scope.close();
};
scope.addEventListener("error", (event) => die(event, event.error ?? event.message));
scope.addEventListener("unhandledrejection", (event) => die(event, event.reason));
