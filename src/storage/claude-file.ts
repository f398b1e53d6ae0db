/**
 * Reading one of Claude Code's own files (docs/RELIABILITY.md "Trust boundaries"). Its directory is not
 * ours: a transcript may be a symlink to /dev/zero, a FIFO nobody writes, or 2 GiB long. So a file is read
 * only when it is a regular file in a real directory (never through a symbolic link, never a FIFO or a
 * device: FsAdapter.readRange checks the descriptor it opened, and never waits on one), line by line in
 * chunks, holding one chunk and at most one line of MAX_LINE bytes; a longer line is passed over, its
 * first bytes handed on so a caller can still tell what it was.
 */
import type { FsAdapter } from "./fs-adapter.ts";

/** Bytes read at a time. */
const CHUNK = 1024 * 1024;
/** The longest line held whole; a longer one is handed on as its first HEAD bytes. */
export const MAX_LINE = 16 * 1024 * 1024;
const HEAD = 4096;
const NEWLINE = 0x0a;

/** Where a Claude Code file stands: absent, refused (why, in a few words), or a regular file of `size` bytes. */
export type ClaudeFile = { kind: "missing" } | { kind: "refused"; why: string } | { kind: "file"; size: number; mtimeMs: number };

/** One line: whole (without its newline), or too long to hold (its first bytes). `last`: no newline ended it. */
export type Line = { bytes: Uint8Array; oversized: false; last: boolean } | { head: Uint8Array; oversized: true; last: boolean };

/** What a scan saw of the file's end. */
export interface ScanEnd {
  /** The scan stopped early (the visitor asked to). */
  stopped: boolean;
  /** The file ends in a newline (or is empty): its last line is complete. */
  endsWithNewline: boolean;
  /** The last line that held more than whitespace, or null. */
  lastLine: Line | null;
}

/** Checks `path` (and its directory) before anything of it is read. */
export async function claudeFile(fs: FsAdapter, path: string): Promise<ClaudeFile> {
  const dir = path.slice(0, path.lastIndexOf("/"));
  const parent = await fs.lstat(dir);
  if (parent === null) return { kind: "missing" };
  if (parent.isSymbolicLink) return { kind: "refused", why: `its directory ${dir} is a symbolic link; not followed` };
  if (!parent.isDirectory) return { kind: "missing" };
  const info = await fs.lstat(path);
  if (info === null) return { kind: "missing" };
  if (info.isSymbolicLink) return { kind: "refused", why: "a symbolic link; not followed" };
  if (info.isDirectory) return { kind: "refused", why: "a directory" };
  if (!info.isFile) return { kind: "refused", why: "not a regular file (a FIFO, a device or a socket); not read" };
  return { kind: "file", size: info.size, mtimeMs: info.mtimeMs };
}

/** True when a line is only whitespace. */
function blank(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

/**
 * Hands each line of the regular file at `path` (`size` bytes, as claudeFile saw it) to `visit`, in order,
 * until the file ends or `visit` returns true. Memory: one chunk and one line of at most MAX_LINE bytes.
 */
export async function scanLines(fs: FsAdapter, path: string, size: number, visit: (line: Line) => boolean | void): Promise<ScanEnd> {
  let carry: Uint8Array[] = [];
  let carried = 0;
  let head: Uint8Array | null = null; // set while passing over a line longer than MAX_LINE
  let lastLine: Line | null = null;
  let lastByte = NEWLINE;
  const emit = (line: Line): boolean => {
    const empty = line.oversized ? false : blank(line.bytes);
    if (!empty) lastLine = line;
    return empty ? false : visit(line) === true;
  };
  const take = (part: Uint8Array) => {
    if (head !== null) return;
    if (carried + part.length > MAX_LINE) {
      const whole = join([...carry, part.subarray(0, Math.max(0, HEAD - carried))]);
      head = whole.subarray(0, Math.min(HEAD, whole.length));
      carry = [];
      carried = 0;
      return;
    }
    carry.push(part.slice());
    carried += part.length;
  };
  const lineEnd = (last: boolean): Line => {
    const line: Line = head !== null ? { head, oversized: true, last } : { bytes: join(carry), oversized: false, last };
    carry = [];
    carried = 0;
    head = null;
    return line;
  };
  for (let offset = 0; offset < size;) {
    const chunk = await fs.readRange(path, offset, Math.min(size, offset + CHUNK));
    if (chunk.length === 0) break; // cut shorter since it was looked at
    offset += chunk.length;
    lastByte = chunk[chunk.length - 1];
    let from = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, from)) {
      take(chunk.subarray(from, nl));
      from = nl + 1;
      if (emit(lineEnd(false))) return { stopped: true, endsWithNewline: true, lastLine };
    }
    take(chunk.subarray(from));
  }
  if (carried > 0 || head !== null) {
    if (emit(lineEnd(true))) return { stopped: true, endsWithNewline: false, lastLine };
  }
  return { stopped: false, endsWithNewline: lastByte === NEWLINE, lastLine };
}

/** Concatenates byte arrays. */
function join(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
