// New records of the sessions open in a live page, polled with the byte-cursor follower: docs/DESIGN.md "The viewer".
import { join } from "node:path/posix";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { JsonlFollower } from "../storage/jsonl-follower.ts";
import { jsonObject } from "../protocol/json.ts";
import type { Rec } from "../transcript/records.ts";

const decoder = new TextDecoder();

/** Records that appeared in one conversation of a session directory, and the bytes its files hold up to the followers' cursors. */
export interface LiveBatch {
  dir: string;
  scope: "main" | "subagent" | "side";
  /** The subagent directory (`agent-…`) for scope "subagent". */
  agent: string | null;
  records: Rec[];
  bytes: number;
}

/**
 * Only the sessions a page has open are looked at, every `pollMs`: a look at the whole tree costs in
 * proportion to the archive (about 130 ms for 1,000 sessions), a look at one session next to nothing.
 */
export class LiveFollower {
  private readonly follows = new Map<number, string>();
  /** Per followed directory, each file's follower. */
  private readonly files = new Map<string, Map<string, JsonlFollower>>();
  private timer: ReturnType<typeof setInterval> | undefined;
  /** Looks run one after another, so the followers move in order. */
  private looking: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
    private readonly pollMs: number,
    private readonly emit: (batch: LiveBatch) => void,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Resolves with the bytes `dir`'s files hold when following began (later records are emitted). */
  follow(id: number, dir: string): Promise<number> {
    this.follows.set(id, dir);
    this.timer ??= setInterval(() => this.next(() => this.lookAll()).catch(this.onError), this.pollMs);
    (this.timer as { unref?: () => void }).unref?.();
    return this.next(async () => this.files.has(dir) ? this.bytesOf(dir) : await this.look(dir, false));
  }

  /** Ends follow `id` (null: every follow). */
  unfollow(id: number | null): void {
    if (id === null) this.follows.clear();
    else this.follows.delete(id);
    const followed = new Set(this.follows.values());
    for (const dir of this.files.keys()) if (!followed.has(dir)) this.files.delete(dir);
    if (this.follows.size > 0) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private next<T>(work: () => Promise<T>): Promise<T> {
    const done = this.looking.then(work);
    this.looking = done.catch(() => {}); // the caller hears the failure
    return done;
  }

  private async lookAll(): Promise<void> {
    for (const dir of new Set(this.follows.values())) if (this.files.has(dir)) await this.look(dir, true);
  }

  private bytesOf(dir: string): number {
    return [...this.files.get(dir)!.values()].reduce((n, f) => n + f.offset, 0);
  }

  /** Reads what grew in `dir`'s conversations and emits it (`emit`), else only sets the followers where the files end. */
  private async look(dir: string, emit: boolean): Promise<number> {
    const followers = this.files.get(dir) ?? this.files.set(dir, new Map()).get(dir)!;
    const base = join(this.root, dir);
    const agents = (await this.fs.readdir(join(base, "subagents"))).filter((e) => e.isDirectory && !e.isSymbolicLink);
    const conversations: [string, Omit<LiveBatch, "records" | "bytes">][] = [
      [base, { dir, scope: "main", agent: null }],
      [join(base, "side"), { dir, scope: "side", agent: null }],
      ...agents.map((e): [string, Omit<LiveBatch, "records" | "bytes">] => [join(base, "subagents", e.name), { dir, scope: "subagent", agent: e.name }]),
    ];
    const batches: Omit<LiveBatch, "bytes">[] = [];
    for (const [path, where] of conversations) {
      const names = (await this.fs.readdir(path)).filter((e) => e.isFile && !e.isSymbolicLink && e.name.endsWith(".jsonl")).map((e) => e.name).sort();
      const records: Rec[] = [];
      for (const file of names.map((name) => join(path, name))) {
        // A file there when following began is followed from its end; one that appeared since, from its first byte.
        const follower = followers.get(file) ?? followers.set(file, new JsonlFollower(file, emit ? {} : { startAt: (size) => size })).get(file)!;
        await follower.read(this.fs, (line) => {
          const record = line.oversized ? null : jsonObject(decoder.decode(line.bytes));
          if (record !== null) records.push(record);
        });
      }
      if (records.length > 0) batches.push({ ...where, records });
    }
    const bytes = this.bytesOf(dir);
    for (const batch of batches) this.emit({ ...batch, bytes });
    return bytes;
  }
}
