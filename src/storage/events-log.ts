/**
 * The tap's own events log, `<root>/session-mirror-events.jsonl` (docs/DESIGN.md "Writes"): ids, times, actions
 * and counts — never content, never credentials. Rotated once at 5 MiB to `session-mirror-events.1.jsonl`.
 */
import type { FsAdapter } from "./fs-adapter.ts";
import { checkTrusted } from "./trusted-path.ts";
import { DIR_MODE, join } from "./paths.ts";
import { networkFailure, withoutRuntimeAdvice } from "../utils/network-error.ts";

/** The events log's file name, directly under the root. */
export const EVENTS_FILE = "session-mirror-events.jsonl";
/** Size at which the events log rotates. */
export const EVENTS_MAX_BYTES = 5 * 1024 * 1024;

/** One event: an action and numbers/ids only. */
export type EventFields = Record<string, string | number | boolean | null>;

/** Who hears how writing the events log goes (the tap turns it into stderr lines and health). */
export interface EventsLogReport {
  failed(error: unknown): void;
  written(): void;
}

/** Appends events in order; every failure is counted and reported, every success too (so recovery is seen). */
export class EventsLog {
  private size: number | null = null;
  private queue: Promise<void> = Promise.resolve();
  /** Events that could not be written. */
  failures = 0;

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    private readonly clock: () => number,
    private readonly report: EventsLogReport,
    private readonly maxBytes = EVENTS_MAX_BYTES,
  ) {}

  /** The events log's path. */
  get path(): string {
    return join(this.root, EVENTS_FILE);
  }

  /** Queues one event; never throws, never rejects. */
  log(action: string, fields: EventFields = {}): Promise<void> {
    const line = JSON.stringify({ ts: new Date(this.clock()).toISOString(), action, ...fields }) + "\n";
    this.queue = this.queue.then(() => this.write(line)).then(() => this.report.written(), (error) => {
      this.failures++;
      this.size = null; // what reached the file is unknown: look again next time
      this.report.failed(error);
    });
    return this.queue;
  }

  /** Resolves once every queued event was written or given up. */
  flush(): Promise<void> {
    return this.queue;
  }

  private async write(line: string): Promise<void> {
    const path = join(this.root, EVENTS_FILE);
    if (this.size === null) {
      await this.fs.mkdir(this.root, DIR_MODE);
      const info = await this.fs.lstat(path);
      if (info !== null) checkTrusted(path, info, "file"); // never append ids and times to a neighbour's file
      this.size = info?.size ?? 0;
    }
    const bytes = Buffer.byteLength(line);
    if (this.size + bytes > this.maxBytes && this.size > 0) {
      await this.fs.rename(path, join(this.root, "session-mirror-events.1.jsonl"));
      this.size = 0;
    }
    await this.fs.append(path, line, false);
    this.size += bytes;
  }
}

/**
 * An error as one short, content-free line: its code (or class) and its first line, without repeating
 * the code (Bun's messages start with it), with a `cause`'s text where the message says nothing ("fetch
 * failed"), and with URLs cut to their origin (a path or query may carry a secret).
 *
 * @example describe(Object.assign(new Error("EACCES: permission denied, open '/m/s.jsonl'"), { code: "EACCES" }))
 *   // → "EACCES: permission denied, open '/m/s.jsonl'"
 */
export function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const name = error instanceof Error ? error.name : typeof error;
  let message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  if (cause instanceof Error && /^(fetch failed|network error)?$/i.test(message.trim())) message = cause.message;
  message = message.split("\n")[0].replace(/\b(https?:\/\/[^/\s)]+)[^\s)]*/g, "$1").slice(0, 200).trim();
  const label = typeof code === "string" && code !== "" ? code : name;
  // A failed connection in our words, never the runtime's (docs/DESIGN.md "Never in the way").
  const failure = networkFailure(typeof code === "string" ? code : "", name, message);
  if (failure !== null) return failure;
  message = withoutRuntimeAdvice(message);
  if (message === "" || message === label) return label;
  return message.startsWith(label) ? message : `${label}: ${message}`;
}

/**
 * describe() for an error met while answering a request: quoted text, URLs and paths are left out of the
 * message too, since a runtime's message may quote the request's URL, and a path or query may carry a
 * secret (a key pasted into a query string).
 */
export function describeBare(error: unknown): string {
  return describe(error)
    .replace(/'[^']*'?|"[^"]*"?|`[^`]*`?/g, "…")
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/\S*/gi, "…")
    .replace(/(^|\s)\/\S*/g, "$1…");
}
