/**
 * The tap's own events log, `<root>/session-mirror-events.jsonl` (SPEC §4 "Writes"): ids, times, actions
 * and counts — never content, never credentials. Rotated once at 5 MiB to `session-mirror-events.1.jsonl`.
 */
import { DIR_MODE, join } from "./mirror-tree.ts";
import type { FsAdapter } from "./fs-adapter.ts";

/** The events log's file name, directly under the root. */
export const EVENTS_FILE = "session-mirror-events.jsonl";
/** Size at which the events log rotates. */
export const EVENTS_MAX_BYTES = 5 * 1024 * 1024;

/** One event: an action and numbers/ids only. */
export type EventFields = Record<string, string | number | boolean | null>;

/** Appends events in order; a failure to log goes to stderr once per failure and is counted. */
export class EventsLog {
  private size: number | null = null;
  private queue: Promise<void> = Promise.resolve();
  /** Events that could not be written. */
  failures = 0;

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    private readonly clock: () => number,
    private readonly stderr: (line: string) => void,
    private readonly maxBytes = EVENTS_MAX_BYTES,
  ) {}

  /** Queues one event; never throws, never rejects. */
  log(action: string, fields: EventFields = {}): Promise<void> {
    const line = JSON.stringify({ ts: new Date(this.clock()).toISOString(), action, ...fields }) + "\n";
    this.queue = this.queue.then(() => this.write(line)).catch((error) => {
      this.failures++;
      this.stderr(`sessiontap: events log not written (${describe(error)})`);
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
      this.size = (await this.fs.lstat(path))?.size ?? 0;
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

/** An error as a short, content-free description: its code and class. */
export function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? error.message.split("\n")[0].slice(0, 200) : String(error).slice(0, 200);
  return typeof code === "string" ? `${code}: ${message}` : `${name}: ${message}`;
}
