/** Wraps the real filesystem adapter so one operation fails on cue: a throw, a rejection or a hang. */
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";

/** How the wrapped call misbehaves. */
export type Fault = "throw" | "reject" | "hang" | null;

/** A real adapter whose mirror-file writes (every append and exclusive create, events log excluded) fail as told. */
export function faultyFs(): { fs: FsAdapter; set(fault: Fault): void; hung: () => number; release(): void; heal(): void } {
  let fault: Fault = null;
  let hung: (() => void)[] = [];
  const wrap = <A extends unknown[], R>(real: (...args: A) => Promise<R>) => (...args: A): Promise<R> => {
    const path = String(args[0]);
    if (fault === null || path.endsWith("session-mirror-events.jsonl")) return real(...args);
    if (fault === "throw") throw Object.assign(new Error("injected EIO"), { code: "EIO" });
    if (fault === "reject") return Promise.reject(Object.assign(new Error("injected ENOSPC"), { code: "ENOSPC" }));
    return new Promise<R>((resolve, reject) => hung.push(() => real(...args).then(resolve, reject)));
  };
  const fs: FsAdapter = {
    ...nodeFs,
    append: wrap(nodeFs.append),
    appendExisting: wrap(nodeFs.appendExisting),
    createExclusive: wrap(nodeFs.createExclusive),
  };
  return {
    fs,
    set: (next) => void (fault = next),
    hung: () => hung.length,
    release() {
      const waiting = hung;
      hung = [];
      for (const go of waiting) go();
    },
    /** No more faults, and every hung write goes on. */
    heal() {
      fault = null;
      this.release();
    },
  };
}
