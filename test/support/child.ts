/**
 * Runs the tap as a child process: with the runtime running the tests (Bun → `bun run src/main.ts`,
 * Deno → `deno run --allow-all --unstable-no-legacy-abort src/main.ts`), or a compiled binary when one is
 * given (the `binary` option, else the SESSIONTAP_BINARY environment variable).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Buffer } from "node:buffer";
import { fileURLToPath } from "node:url";
import process from "node:process";

/** The repository root (children run there, so Deno finds deno.json). */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Options for a tap child. */
export interface ChildOptions {
  /** Extra environment; the parent's SESSIONTAP_* and CLAUDE_CONFIG_DIR are never inherited. */
  env?: Record<string, string>;
  /** A compiled binary to run instead of the source. */
  binary?: string;
  /** A program and its leading arguments to run instead (e.g. a `deno task`); the tap's arguments follow. */
  command?: string[];
}

/** How the process ended. */
export interface Exit {
  code: number | null;
  signal: string | null;
}

/** A running tap child. */
export interface TapChild {
  child: ChildProcess;
  /** Everything written to stdout / stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in the stream's text; rejects after `ms` or on exit. */
  waitFor(stream: "stdout" | "stderr", pattern: RegExp, ms?: number): Promise<RegExpMatchArray>;
  /**
   * Sends a signal with process.kill(pid): Deno 2.9's `child.kill(sig)` makes node:child_process report
   * that signal as the cause of exit even when the child handled it and exited 0.
   */
  signal(name: "SIGTERM" | "SIGINT"): boolean;
  /** Resolves when the process has exited. */
  exited: Promise<Exit>;
  /** Like `exited`, but rejects (after killing the child) if it takes longer than `ms`. */
  exit(ms?: number): Promise<Exit>;
}

/** The command and arguments that start the tap with `args`. */
export function tapCommand(args: string[], binary = process.env.SESSIONTAP_BINARY): { command: string; args: string[] } {
  if (binary) return { command: binary, args };
  if (typeof (globalThis as { Bun?: unknown }).Bun !== "undefined") return { command: process.execPath, args: ["run", "src/main.ts", ...args] };
  return { command: process.execPath, args: ["run", "--allow-all", "--unstable-no-legacy-abort", "src/main.ts", ...args] };
}

/** The child's environment: the parent's, less tap settings, plus NO_COLOR and `extra`. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith("SESSIONTAP_") && k !== "CLAUDE_CONFIG_DIR") env[k] = v;
  }
  return { ...env, NO_COLOR: "1", ...extra };
}

/** Starts the tap with `args` as a child process. */
export function spawnTap(args: string[], options: ChildOptions = {}): TapChild {
  const { command, args: argv } = options.command
    ? { command: options.command[0], args: [...options.command.slice(1), ...args] }
    : tapCommand(args, options.binary);
  const child = spawn(command, argv, { cwd: ROOT, env: childEnv(options.env), stdio: ["ignore", "pipe", "pipe"] });
  const text = { stdout: "", stderr: "" };
  const listeners = new Set<() => void>();
  let done: Exit | null = null;
  const exited = new Promise<Exit>((resolve) => {
    // "close", not "exit": it comes after the output pipes are drained.
    child.on("close", (code, signal) => {
      done = { code, signal };
      for (const l of listeners) l();
      resolve(done);
    });
    child.on("error", (error) => {
      text.stderr += `spawn failed: ${error}\n`;
      done = { code: null, signal: null };
      for (const l of listeners) l();
      resolve(done);
    });
  });
  for (const name of ["stdout", "stderr"] as const) {
    child[name]!.on("data", (chunk: Buffer) => {
      text[name] += Buffer.from(chunk).toString("utf8");
      for (const l of listeners) l();
    });
  }

  const waitFor = (stream: "stdout" | "stderr", pattern: RegExp, ms = 20_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const m = text[stream].match(pattern);
        if (m) finish(() => resolve(m));
        else if (done !== null) {
          finish(() =>
            reject(new Error(`exited (${JSON.stringify(done)}) before ${stream} matched ${pattern}; stdout: ${text.stdout} stderr: ${text.stderr}`))
          );
        }
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`${stream} did not match ${pattern} within ${ms} ms; stdout: ${text.stdout} stderr: ${text.stderr}`))),
        ms,
      );
      const finish = (then: () => void) => {
        clearTimeout(timer);
        listeners.delete(check);
        then();
      };
      listeners.add(check);
      check();
    });

  const exit = (ms = 20_000) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error(`the tap did not exit within ${ms} ms; stderr: ${text.stderr}`));
      }, ms);
    });
    return Promise.race([exited, limit]).finally(() => clearTimeout(timer));
  };

  const signal = (name: "SIGTERM" | "SIGINT") => {
    if (done !== null || child.pid === undefined) return false;
    try {
      return process.kill(child.pid, name);
    } catch {
      return false;
    }
  };

  return { child, stdout: () => text.stdout, stderr: () => text.stderr, waitFor, signal, exited, exit };
}

/** Stops every child in `children` (SIGTERM, then SIGKILL past 10 s) and empties the list: a suite's afterEach. */
export async function stopAll(children: TapChild[]): Promise<void> {
  for (const c of children.splice(0)) {
    c.signal("SIGTERM");
    await c.exit(10_000).catch(() => c.child.kill("SIGKILL"));
  }
}

/** Runs the tap with `args` to completion (bounded); returns exit status and output. */
export async function runTap(args: string[], options: ChildOptions & { timeoutMs?: number } = {}): Promise<Exit & { stdout: string; stderr: string }> {
  const tap = spawnTap(args, options);
  const exit = await tap.exit(options.timeoutMs ?? 20_000);
  return { ...exit, stdout: tap.stdout(), stderr: tap.stderr() };
}

/** Starts `serve --port 0 …`, waits for the startup block and returns the child and its base URL. */
export async function serveTap(args: string[], options: ChildOptions = {}): Promise<{ tap: TapChild; url: string; port: number }> {
  const tap = spawnTap(["serve", "--port", "0", ...args], options);
  try {
    const m = await tap.waitFor("stdout", /export ANTHROPIC_BASE_URL=(http:\/\/127\.0\.0\.1:(\d+))\n/);
    return { tap, url: m[1], port: Number(m[2]) };
  } catch (error) {
    tap.child.kill("SIGKILL");
    throw error;
  }
}
