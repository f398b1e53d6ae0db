/**
 * Follows one of Claude Code's transcript files without re-reading it: remembers which file it is
 * (device, inode), how far it has read (the end of the last whole line) and the bytes just before that
 * point, so each look reads only what was appended. A file replaced, cut shorter or rewritten before that
 * point is read afresh. A file first met (or met afresh) larger than the tail window is read from its
 * tail only; what lies before is unknown, and the guard judges nothing it cannot see. Every read opens,
 * reads a range and closes (FsAdapter.readRange): Claude Code's file is never held open, never written.
 */
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { parseLine } from "./transcript-lines.ts";

/** Bytes compared before the read point to notice a file rewritten in place. */
const BOUNDARY = 64;
const NEWLINE = 0x0a;

/** Limits of one follower's reads. */
export interface FollowLimits {
  /** Most bytes read by one look (the rest waits for the next). */
  maxBytes: number;
  /** A file first met larger than this is read from this many bytes before its end. */
  tailBytes: number;
}

/** What one look found. */
export type Look =
  | { kind: "missing" }
  | { kind: "not-a-file" }
  | { kind: "read"; bytes: number; restarted: boolean; caughtUp: boolean };

/** The follower of one file path. */
export class TranscriptFollower {
  private dev = -1;
  private ino = -1;
  private offset = 0;
  private boundary: Uint8Array = new Uint8Array(0);
  private mtimeMs = -1;
  private size = -1;
  /** True once a user or assistant record was seen in what was read. */
  conversation = false;
  /** Prompt keys seen in what was read (bounded). */
  readonly keys = new Set<string>();
  /** True when the file has been read from its first byte (so "nothing seen" means "nothing there"). */
  fromStart = false;
  /** When the current file was first read (0 before), for prompts that may sit before a tail window. */
  startedAt = 0;
  /** User lines too long to read (not tool results): prompts that may be in the file unseen. */
  oversizedPrompts = 0;
  /** Inside a line too long for one read: skip to its end. */
  private skipping = false;
  /** The last look read to the end of the file (a torn or half-written last line is all that may be left unread). */
  private atEnd = false;

  constructor(
    readonly path: string,
    private readonly limits: FollowLimits,
    private readonly maxKeys = 20_000,
  ) {}

  /** True when the file has been read to its end as last seen (all but an unfinished last line). */
  get caughtUp(): boolean {
    return this.size >= 0 && this.atEnd;
  }

  /** Looks at the file once: stat, then read what changed (bounded). */
  async look(fs: FsAdapter, now: number): Promise<Look> {
    const info = await fs.lstat(this.path);
    if (info === null) {
      this.forget();
      return { kind: "missing" };
    }
    if (!info.isFile) {
      this.forget();
      return { kind: "not-a-file" };
    }
    let restarted = false;
    if (info.dev !== this.dev || info.ino !== this.ino || info.size < this.offset) {
      this.restart(info.dev, info.ino, info.size, now);
      restarted = true;
    } else if (info.size === this.size && info.mtimeMs === this.mtimeMs && this.atEnd) {
      return { kind: "read", bytes: 0, restarted: false, caughtUp: true };
    }
    this.size = info.size;
    this.mtimeMs = info.mtimeMs;
    let bytes = 0;
    this.atEnd = this.offset >= info.size;
    if (!this.atEnd) {
      const from = Math.max(0, this.offset - this.boundary.length);
      const chunk = await fs.readRange(this.path, from, Math.min(info.size, this.offset + this.limits.maxBytes));
      bytes = chunk.length;
      const lead = this.offset - from;
      if (!sameBytes(chunk.subarray(0, lead), this.boundary)) {
        // Rewritten before the read point: start over (the next look reads it afresh).
        this.restart(info.dev, info.ino, info.size, now);
        return { kind: "read", bytes, restarted: true, caughtUp: false };
      }
      this.consume(chunk.subarray(lead), chunk);
      this.atEnd = from + chunk.length >= info.size;
    }
    return { kind: "read", bytes, restarted, caughtUp: this.caughtUp };
  }

  /** Forgets the file (it went away): the next file at this path is a new one. */
  private forget(): void {
    this.dev = -1;
    this.ino = -1;
    this.size = -1;
    this.mtimeMs = -1;
    this.offset = 0;
    this.boundary = new Uint8Array(0);
    this.conversation = false;
    this.keys.clear();
    this.fromStart = false;
    this.startedAt = 0;
    this.oversizedPrompts = 0;
    this.skipping = false;
    this.atEnd = false;
  }

  /** Starts on a file afresh: from its first byte, or from its tail window when it is large. */
  private restart(dev: number, ino: number, size: number, now: number): void {
    this.forget();
    this.dev = dev;
    this.ino = ino;
    this.startedAt = now;
    if (size > this.limits.tailBytes) {
      this.offset = size - this.limits.tailBytes;
      this.skipping = true; // the window starts mid-line, most likely
    } else {
      this.fromStart = true;
    }
  }

  /** Reads the whole lines of `data` (the bytes from the read point on), advancing past them. */
  private consume(data: Uint8Array, whole: Uint8Array): void {
    let start = 0;
    let consumed = 0;
    for (let i = 0; i < data.length; i++) {
      if (data[i] !== NEWLINE) continue;
      if (this.skipping) this.skipping = false;
      else this.take(data.subarray(start, i));
      start = i + 1;
      consumed = i + 1;
    }
    if (consumed === 0 && data.length >= this.limits.maxBytes) {
      // One line longer than a read: note what it was, then skip to its end.
      if (!this.skipping) this.noteOversized(data);
      this.skipping = true;
      consumed = data.length;
    }
    this.offset += consumed;
    const end = whole.length - data.length + consumed;
    this.boundary = whole.slice(Math.max(0, end - BOUNDARY), end);
  }

  /** Takes one whole line into what is known of the file. */
  private take(line: Uint8Array): void {
    const found = parseLine(line);
    if (found === null) return;
    if (found.conversation) this.conversation = true;
    for (const key of found.keys) {
      if (this.keys.size >= this.maxKeys) this.keys.delete(this.keys.values().next().value as string);
      this.keys.add(key);
    }
  }

  /** Counts a line too long to read: a conversation record, and possibly a prompt the keys cannot show. */
  private noteOversized(head: Uint8Array): void {
    const text = new TextDecoder().decode(head.subarray(0, 4096));
    if (/"type":"(user|assistant)"/.test(text)) this.conversation = true;
    if (/"type":"user"/.test(text) && !/"tool_use_id"|"tool_result"/.test(text)) this.oversizedPrompts++;
  }
}

/** True when two byte ranges are equal. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
