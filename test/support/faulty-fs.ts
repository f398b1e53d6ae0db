/**
 * The real filesystem adapter failing on cue, built in the engine's Worker (engine-seams.ts): `faultyFs`
 * makes mirror-file writes throw, reject or hang; `failingFs` fails the writes under a `faulty-` session
 * with an error code; `lockFaults` fails the reads and removals of writer locks with EMFILE.
 */
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { inEngine, served } from "./engine-seams.ts";

/** How the wrapped call misbehaves. */
export type Fault = "throw" | "reject" | "hang" | null;

/** A real adapter whose mirror-file writes (every append and exclusive create, events log excluded) fail as told. */
function faultyFs() {
  let fault: Fault = null;
  let hung: (() => void)[] = [];
  let skew = 0;
  const wrap = <A extends unknown[], R>(real: (...args: A) => Promise<R>) => (...args: A): Promise<R> => {
    const path = String(args[0]);
    if (fault === null || path.endsWith("session-mirror-events.jsonl")) return real(...args);
    if (fault === "throw") throw Object.assign(new Error("injected EIO"), { code: "EIO" });
    if (fault === "reject") return Promise.reject(Object.assign(new Error("injected ENOSPC"), { code: "ENOSPC" }));
    return new Promise<R>((resolve, reject) => hung.push(() => real(...args).then(resolve, reject)));
  };
  const release = () => {
    const waiting = hung;
    hung = [];
    for (const go of waiting) go();
  };
  return {
    fs: { ...nodeFs, append: wrap(nodeFs.append), appendExisting: wrap(nodeFs.appendExisting), createExclusive: wrap(nodeFs.createExclusive) },
    /** The engine's clock, `skew` ms ahead. */
    clock: () => Date.now() + skew,
    set: (next: Fault) => void (fault = next),
    /** Writes hanging now. */
    hung: () => hung.length,
    release,
    /** No more faults, and every hung write goes on. */
    heal() {
      fault = null;
      release();
    },
    skew: (ms: number) => void (skew = ms),
  };
}

/** The real adapter, whose writes under a `faulty-` session's directory fail with `code` while it is set. */
function failingFs() {
  let code: string | null = null;
  let injected = 0;
  const guard = <A extends unknown[], R>(real: (...a: A) => Promise<R>) => async (...args: A): Promise<R> => {
    const path = String(args[0]);
    if (code !== null && path.includes("/faulty-") && !path.endsWith("session-mirror-events.jsonl")) {
      injected++;
      throw Object.assign(new Error(`injected ${code}: ${path}`), { code });
    }
    return real(...args);
  };
  return {
    fs: { ...nodeFs, append: guard(nodeFs.append), link: guard(nodeFs.link), mkdir: guard(nodeFs.mkdir) },
    fail: (next: string | null) => void (code = next),
    injected: () => injected,
  };
}

/** The real adapter, whose next reads or removals of a writer lock file fail with EMFILE, as in a process out of descriptors. */
function lockFaults() {
  let reads = 0;
  let unlinks = 0;
  let injected = 0;
  const isLock = (path: string) => /\/\.locks\/[0-9a-f]{32}\.lock$/.test(path);
  const emfile = (path: string) => {
    injected++;
    return Object.assign(new Error(`EMFILE: too many open files, open '${path}'`), { code: "EMFILE" });
  };
  const fs: FsAdapter = {
    ...nodeFs,
    readText: (path) => (isLock(path) && reads > 0 && reads-- > 0 ? Promise.reject(emfile(path)) : nodeFs.readText(path)),
    unlink: (path) => (isLock(path) && unlinks > 0 && unlinks-- > 0 ? Promise.reject(emfile(path)) : nodeFs.unlink(path)),
  };
  return { fs, failReads: (n: number) => void (reads = n), failUnlinks: (n: number) => void (unlinks = n), injected: () => injected };
}

/** `faultyFs` as the engine's Worker builds it (EngineSeams names it). */
export const servedFaultyFs = served(faultyFs);
/** `failingFs` as the engine's Worker builds it. */
export const servedFailingFs = served(failingFs);
/** `lockFaults` as the engine's Worker builds it. */
export const servedLockFaults = served(lockFaults);

/** A tap's engine over `faultyFs`: its seams, and its controls (call them once the tap has started). */
export const faultyEngineFs = () => inEngine<ReturnType<typeof faultyFs>>(import.meta.url, "servedFaultyFs", ["set", "hung", "release", "heal", "skew"]);
/** A tap's engine over `failingFs`. */
export const failingEngineFs = () => inEngine<ReturnType<typeof failingFs>>(import.meta.url, "servedFailingFs", ["fail", "injected"]);
/** A tap's engine over `lockFaults`. */
export const lockFaultsEngineFs = () => inEngine<ReturnType<typeof lockFaults>>(import.meta.url, "servedLockFaults", ["failReads", "failUnlinks", "injected"]);
