// Follows one JSONL file by byte cursor, handing on only whole lines appended since the last read (docs/DESIGN.md "Reading files that grow").
import type { FsAdapter } from "./fs-adapter.ts";

const NEWLINE = 0x0a;
/** Bytes compared before the cursor to notice a file rewritten in place. */
const BOUNDARY = 64;
const CHUNK = 1024 * 1024;
const HEAD = 4096;

/** A whole line without its newline, or the first bytes of one longer than `maxLine` (then skipped); `last`: an unfinished final line. */
export type Line = { bytes: Uint8Array; oversized: boolean; last?: true };

export type FollowRead = { kind: "missing" | "not-a-file" } | { kind: "read"; atEnd: boolean; bytes: number };

export interface FollowOptions {
  /** Where reading starts in a file first met or met afresh (0 unless given): mid-line, the partial line is skipped. */
  startAt?: (size: number) => number;
  maxLine?: number;
}

export class JsonlFollower {
  offset = 0;
  private dev = -1;
  private ino = -1;
  private size = -1;
  private mtimeMs = -1;
  private boundary = new Uint8Array(0);
  private skipping = false;
  /** How far the last read looked (past the cursor when the file ends in an unfinished line). */
  private readTo = -1;

  constructor(readonly path: string, private readonly o: FollowOptions = {}) {}

  /** One lstat, then at most `maxBytes` from the cursor; a file replaced, cut or rewritten before the cursor is read afresh (`onRestart`).
   * `final`: an unfinished last line is handed on too (`last`), the cursor left before it. */
  async read(
    fs: FsAdapter,
    visit: (line: Line) => void,
    o: { maxBytes?: number; final?: boolean; onRestart?: (start: number) => void } = {},
  ): Promise<FollowRead> {
    const info = await fs.lstat(this.path);
    if (info === null || !info.isFile) {
      this.restart(-1, -1, 0);
      this.size = -1;
      return { kind: info === null ? "missing" : "not-a-file" };
    }
    const again = () => {
      const start = this.restart(info.dev, info.ino, info.size); // not in the optional call: it would be skipped with no onRestart
      o.onRestart?.(start);
    };
    if (info.dev !== this.dev || info.ino !== this.ino || info.size < this.offset) again();
    else if (!o.final && info.size === this.size && info.mtimeMs === this.mtimeMs && this.readTo === info.size) {
      return { kind: "read", atEnd: true, bytes: 0 };
    }
    this.size = info.size;
    this.mtimeMs = info.mtimeMs;
    const maxLine = this.o.maxLine ?? 16 * 1024 * 1024;
    const budget = o.maxBytes ?? Number.POSITIVE_INFINITY;
    let bytes = 0;
    let carry: Uint8Array[] = [];
    let carried = 0;
    let at = this.offset; // bytes up to here are consumed or carried
    while (at < info.size && bytes < budget) {
      const lead = at === this.offset ? this.boundary.length : 0;
      const end = Math.min(info.size, at + Math.min(CHUNK, budget - bytes));
      const chunk = await fs.readRange(this.path, at - lead, end);
      if (chunk.length <= lead) break; // cut shorter since the lstat
      bytes += chunk.length;
      if (lead > 0 && !same(chunk.subarray(0, lead), this.boundary)) {
        again();
        (carry = []), (carried = 0), (at = this.offset);
        continue;
      }
      const data = chunk.subarray(lead);
      let from = 0;
      for (let nl = data.indexOf(NEWLINE); nl >= 0; nl = data.indexOf(NEWLINE, from)) {
        const part = data.subarray(from, nl);
        if (this.skipping) this.skipping = false;
        else if (carried + part.length > maxLine) visit({ bytes: concat([...carry, part]).subarray(0, HEAD), oversized: true });
        else visit({ bytes: carried === 0 ? part : concat([...carry, part]), oversized: false });
        carry = [];
        carried = 0;
        from = nl + 1;
        this.mark(chunk, lead + nl + 1, at + nl + 1);
      }
      const rest = data.subarray(from);
      if (!this.skipping && carried + rest.length > maxLine) {
        visit({ bytes: concat([...carry, rest]).subarray(0, HEAD), oversized: true });
        this.skipping = true;
      }
      if (this.skipping) {
        carry = [];
        carried = 0;
        this.mark(chunk, chunk.length, at + data.length);
      } else {
        carry.push(rest.slice());
        carried += rest.length;
      }
      at += data.length;
    }
    this.readTo = at;
    if (o.final && at >= info.size && carried > 0) visit({ bytes: concat(carry), oversized: false, last: true });
    return { kind: "read", atEnd: at >= info.size, bytes };
  }

  /** The cursor moves to `offset`, which is `pos` in `chunk`: the bytes before it there are the new boundary. */
  private mark(chunk: Uint8Array, pos: number, offset: number): void {
    this.offset = offset;
    this.boundary = chunk.slice(Math.max(0, pos - BOUNDARY), pos);
  }

  private restart(dev: number, ino: number, size: number): number {
    this.dev = dev;
    this.ino = ino;
    const start = Math.max(0, Math.min(size, this.o.startAt?.(size) ?? 0));
    // One byte early, so a start right after a newline skips only that newline.
    this.offset = start > 0 ? start - 1 : 0;
    this.skipping = start > 0;
    this.boundary = new Uint8Array(0);
    this.readTo = -1;
    return start;
  }
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, at), (at += p.length);
  return out;
}
