/**
 * New mirror records as they are written, for the viewer's server-sent events. While anyone listens, a
 * watcher follows every mirror file from where it stood when listening began (per-file byte cursors,
 * whole lines only) and hands each batch of new records to the listeners. It looks at a session as soon
 * as this process writes to it (a hint from `observeWrites`) and at the whole tree every `pollMs`, so
 * records another tap writes to the same root show up as well. Read-only.
 */
import { type Rec } from "../transcript/records.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { join } from "node:path/posix";
import { parseJsonl } from "../protocol/json.ts";

/** Records that appeared in one conversation directory. */
export interface LiveBatch {
  /** The session's directory name under the root. */
  dir: string;
  /** Which conversation of the session: the main one, a subagent's, or side requests. */
  scope: "main" | "subagent" | "side";
  /** The subagent directory (`agent-…`) for scope "subagent". */
  agent: string | null;
  records: Rec[];
}

/** A listener of new records. */
export type LiveListener = (batch: LiveBatch) => void;

const NEWLINE = 0x0a;

/** Follows the mirror tree under `root` while it has listeners. */
export class LiveWatcher {
  private listeners = new Set<LiveListener>();
  private cursors = new Map<string, number>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private scanning: Promise<void> = Promise.resolve();
  private pending = new Set<string>();
  private hinted: ReturnType<typeof setTimeout> | null = null;
  private started: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly fs: FsAdapter,
    readonly root: string,
    private readonly pollMs = 1000,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** Adds a listener; resolves once the watcher knows where every file stands (later records are sent). */
  async subscribe(listener: LiveListener): Promise<() => void> {
    if (this.closed) return () => {};
    this.listeners.add(listener);
    if (this.started === null) {
      this.started = this.queue(null, false);
      this.timer = setInterval(() => void this.queue(null, true), this.pollMs);
      (this.timer as { unref?: () => void }).unref?.();
    }
    await this.started;
    return () => this.unsubscribe(listener);
  }

  /** Something in `path` (a file under the root) was just written: look at its session soon. */
  hint(path: string): void {
    if (this.started === null || !path.startsWith(this.root + "/")) return;
    const dir = path.slice(this.root.length + 1).split("/")[0];
    if (dir === "" || dir.startsWith(".") || dir.endsWith(".jsonl")) return; // staging, the events log
    this.pending.add(dir);
    this.hinted ??= setTimeout(() => {
      this.hinted = null;
      const dirs = [...this.pending];
      this.pending.clear();
      for (const d of dirs) void this.queue(d, true);
    }, 0);
  }

  /** Stops watching and forgets every listener. */
  close(): void {
    this.closed = true;
    this.listeners.clear();
    this.stop();
  }

  private unsubscribe(listener: LiveListener): void {
    this.listeners.delete(listener);
    if (this.listeners.size === 0) this.stop();
  }

  private stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    if (this.hinted !== null) clearTimeout(this.hinted);
    this.timer = null;
    this.hinted = null;
    this.started = null;
    this.cursors.clear();
  }

  /** Runs one scan after the previous one (scans never overlap, so cursors move in order). */
  private queue(dir: string | null, emit: boolean): Promise<void> {
    this.scanning = this.scanning
      .then(() => (this.started === null && emit ? undefined : this.scan(dir, emit)))
      .catch((error) => this.onError(error));
    return this.scanning;
  }

  /** Looks at one session directory, or all of them; emits what grew when `emit`, else only sets cursors. */
  private async scan(only: string | null, emit: boolean): Promise<void> {
    const dirs = only !== null
      ? [only]
      : (await this.fs.readdir(this.root)).filter((e) => e.isDirectory && !e.isSymbolicLink && !e.name.startsWith(".")).map((e) => e.name);
    for (const dir of dirs) {
      const base = join(this.root, dir);
      await this.follow(base, { dir, scope: "main", agent: null }, emit);
      await this.follow(join(base, "side"), { dir, scope: "side", agent: null }, emit);
      for (const agent of await this.fs.readdir(join(base, "subagents"))) {
        if (agent.isDirectory && !agent.isSymbolicLink) {
          await this.follow(join(base, "subagents", agent.name), { dir, scope: "subagent", agent: agent.name }, emit);
        }
      }
    }
  }

  /** Reads what grew in the `*.jsonl` files directly in `path`. */
  private async follow(path: string, where: Omit<LiveBatch, "records">, emit: boolean): Promise<void> {
    const names = (await this.fs.readdir(path)).filter((e) => e.isFile && !e.isSymbolicLink && e.name.endsWith(".jsonl")).map((e) => e.name).sort();
    const records: Rec[] = [];
    for (const name of names) {
      const file = join(path, name);
      const info = await this.fs.lstat(file);
      if (info === null || !info.isFile) continue;
      const known = this.cursors.get(file);
      if (!emit) {
        this.cursors.set(file, info.size);
        continue;
      }
      const from = known ?? 0; // a file that appeared since listening began is new from its first byte
      if (info.size < from) this.cursors.set(file, info.size); // cut by a repair: nothing new to tell
      if (info.size <= from) continue;
      const bytes = await this.fs.readRange(file, from, info.size);
      const end = bytes.lastIndexOf(NEWLINE) + 1; // a line still being written waits for the next look
      if (end === 0) continue;
      records.push(...parseJsonl(new TextDecoder().decode(bytes.subarray(0, end))).records);
      this.cursors.set(file, from + end);
    }
    if (records.length > 0) { for (const listener of [...this.listeners]) listener({ ...where, records }); }
  }
}
