// The tap's own events log (docs/DESIGN.md "Writes"): ids, times, actions and counts — never content, never credentials. Rotated once
// at 5 MiB to `session-mirror-events.1.jsonl`.
import type { FsAdapter } from "./fs-adapter.ts";
import { join } from "node:path/posix";
import { checkTrusted, DIR_MODE } from "./trusted-path.ts";

export const EVENTS_FILE = "session-mirror-events.jsonl";
const EVENTS_MAX_BYTES = 5 * 1024 * 1024;

export type EventFields = Record<string, string | number | boolean | null>;

export interface EventsLogReport {
  failed(error: unknown): void;
  written(): void;
}

/** Every failure is counted and reported, every success too (so recovery is seen). */
export class EventsLog {
  private size: number | null = null;
  private queue: Promise<void> = Promise.resolve();
  failures = 0;

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    private readonly clock: () => number,
    private readonly report: EventsLogReport,
    private readonly maxBytes = EVENTS_MAX_BYTES,
  ) {}

  get path(): string {
    return join(this.root, EVENTS_FILE);
  }

  log(action: string, fields: EventFields = {}): Promise<void> {
    const line = JSON.stringify({ ts: new Date(this.clock()).toISOString(), action, ...fields }) + "\n";
    this.queue = this.queue.then(() => this.write(line)).then(() => this.report.written(), (error) => {
      this.failures++;
      this.size = null; // what reached the file is unknown: look again next time
      this.report.failed(error);
    });
    return this.queue;
  }

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
