/** Starts a real tap in this process (real server, real files) against a stub upstream, for one test. */
import { after, before } from "node:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { parseConfig } from "../../src/config/parse.ts";
import { type RunningTap, startTap, type TapDeps } from "../../src/cli/start-tap.ts";
import { startStub, type StubUpstream } from "./stub-upstream.ts";

/** A tap plus its scratch mirror root; `await using` closes it when the block ends. */
export interface TestTap extends RunningTap, AsyncDisposable {
  root: string;
  /** Lines the tap wrote to stderr. */
  stderrLines: string[];
  /**
   * Resolves once the mirror has written what it was sent so far (it flushes, bounded): a client has its
   * answer's last byte before the write (docs/DESIGN.md "Writes"), so a test reads the tree after this.
   */
  settled(): Promise<void>;
  /** Stops the tap (once: `stop` and `close` share it) and removes the scratch directory. */
  close(): Promise<void>;
}

/** Longest wait of `settled()` for the mirror's writes. */
const SETTLE_MS = 5000;

/** Starts a tap on a free port with a fresh mirror root; `env` adds settings. */
export async function startTestTap(upstream: string, env: Record<string, string> = {}, deps: TapDeps = {}, root?: string): Promise<TestTap> {
  const dir = root ?? mkdtempSync(`${tmpdir()}/sessiontap-test-`);
  const config = parseConfig(["serve", "--port", "0", "--upstream", upstream, "--mirror-dir", `${dir}/mirror`], { SESSIONTAP_DRAIN_MS: "2000", ...env }, dir);
  const errors: string[] = [];
  if (config.mirror) mkdirSync(`${dir}/mirror`, { recursive: true, mode: 0o700 }); // as `serve` makes it before it listens
  // Unwritten commits that the root refuses at stop go under the scratch directory, never the real temp dir.
  const tap = await startTap(config, { stderr: (line) => errors.push(line), spoolTmpDir: dir, ...deps });
  let stopped: ReturnType<RunningTap["stop"]> | null = null;
  const stop = (closed?: () => void) => (stopped ??= tap.stop(closed));
  const close = async () => {
    await stop();
    if (root === undefined) rmSync(dir, { recursive: true, force: true });
  };
  return {
    ...tap,
    stop,
    root: `${dir}/mirror`,
    stderrLines: errors,
    settled: async () => void (await tap.engine?.query("mirror.flush", SETTLE_MS)),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Every mirror record under `dir` (recursively), per file, in file order; the events log excluded. */
export function readTree(dir: string): Map<string, Record<string, unknown>[]> {
  const out = new Map<string, Record<string, unknown>[]>();
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const path = `${d}/${name}`;
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".jsonl") && !name.startsWith("session-mirror-events")) {
        const lines = readFileSync(path, "utf8").split("\n").filter((l) => l.trim() !== "");
        out.set(path.slice(dir.length + 1), lines.map((l) => JSON.parse(l)));
      }
    }
  };
  walk(dir);
  return out;
}

/** All records of the tree, concatenated in path order. */
export function allRecords(dir: string): Record<string, unknown>[] {
  return [...readTree(dir).values()].flat();
}

/** The events log's lines. */
export function readEvents(root: string): Record<string, unknown>[] {
  try {
    return readFileSync(`${root}/session-mirror-events.jsonl`, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

/** Reads a whole response body as bytes. */
export async function bytesOf(response: Response): Promise<Uint8Array> {
  return new Uint8Array(await response.arrayBuffer());
}

/** What a suite's tap is started with: its settings, seams and scratch directory (startTestTap's arguments). */
export interface TapOptions {
  env?: Record<string, string>;
  deps?: TapDeps;
  root?: string;
}

/**
 * The suite hooks most tests share: before its tests a stub upstream and a tap in front of it (handed to
 * `use`), after them both closed, the tap first; `options` is read when the hook runs, so it may name what
 * an earlier `before` made. A test that needs a tap (or a stub) of its own starts it with `await using`,
 * and it is closed when the test's block ends.
 */
export function withTap(use: (started: { stub: StubUpstream; tap: TestTap }) => void, options: TapOptions | (() => TapOptions) = {}): void {
  let started: { stub: StubUpstream; tap?: TestTap } | null = null;
  before(async () => {
    const { env, deps, root } = typeof options === "function" ? options() : options;
    started = { stub: await startStub() };
    started.tap = await startTestTap(started.stub.url, env, deps, root);
    use({ stub: started.stub, tap: started.tap });
  });
  after(async () => {
    await started?.tap?.close();
    await started?.stub.close();
  });
}
