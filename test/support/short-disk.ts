/**
 * A nearly full disk on every runtime: the real adapter built over the kernel's write, except that writes
 * to the files a rule names get only the room the rule has left. Then, as the kernel does on a filling
 * disk, a write is short (Bun and Node's FileHandle.write resolve with fewer bytes than asked, no error)
 * and the next one fails with ENOSPC; or, as told, it writes part and throws in the same call (what Deno's
 * FileHandle.write does: it loops, and throws after the part it wrote), or it returns 0. Measured on a
 * 256 KiB tmpfs with 4 KiB free: a 21,001-byte write resolved with 4,096 on Bun and Node, and threw
 * ENOSPC with 4,096 bytes written on Deno. A tap's engine gets it in its Worker (engine-seams.ts).
 */
import { createNodeFs, type FsAdapter, kernelWrite } from "../../src/storage/fs-adapter.ts";
import { inEngine, served } from "./engine-seams.ts";

/** What a write meets once a rule's room is used up. */
export type Full = "enospc" | "zero" | "part-then-throw";

/** The disk and its controls. */
export interface ShortDisk {
  fs: FsAdapter;
  /** From now on, writes to the paths that include `where` share `room` bytes, then meet `full`. */
  fill(where: string, room: number, full?: Full): void;
  /** From now on, every write to the paths that include `where` writes at most `piece` bytes (a disk that is slow to take them, never full). */
  dribble(where: string, piece: number): void;
  /** Room everywhere again (every rule removed). */
  heal(): void;
  /** Writes that were cut: wrote fewer bytes than asked (none included). */
  cut(): number;
}

/** Builds a nearly full disk; until `fill` is called it is the real one. */
export function shortDisk(): ShortDisk {
  let rules: { where: string; room: number; full: Full; piece: number }[] = [];
  let cut = 0;
  const enospc = (path: string) => Object.assign(new Error(`ENOSPC: no space left on device, write '${path}'`), { code: "ENOSPC" });
  const fs = createNodeFs(async (path, handle, bytes) => {
    const rule = rules.find((r) => path.includes(r.where));
    if (rule === undefined) return await kernelWrite(path, handle, bytes);
    const room = Math.min(bytes.length, rule.room, rule.piece);
    if (room < bytes.length) cut++;
    if (room === 0 && rule.full === "zero") return 0;
    if (room === 0) throw enospc(path);
    const wrote = await kernelWrite(path, handle, bytes.subarray(0, room));
    rule.room -= wrote;
    if (wrote < bytes.length && rule.room === 0 && rule.full === "part-then-throw") throw enospc(path);
    return wrote;
  });
  return {
    fs,
    fill: (where, room, full = "enospc") => void rules.push({ where, room, full, piece: Infinity }),
    dribble: (where, piece) => void rules.push({ where, room: Infinity, full: "enospc", piece }),
    heal: () => void (rules = []),
    cut: () => cut,
  };
}

/** The Worker's side (EngineSeams names it). */
export const servedShortDisk = served(shortDisk);

/** A tap's engine over a nearly full disk: its seams, and its controls (call them once the tap has started). */
export const shortEngineDisk = () => inEngine<ShortDisk>(import.meta.url, "servedShortDisk", ["fill", "dribble", "heal", "cut"]);
