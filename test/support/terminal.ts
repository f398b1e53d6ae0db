/**
 * Drives a terminal program for a test: a pseudo-terminal and a headless xterm in a small Node process
 * (test/support/pty-host.mjs), talked to over stdio, so a test types into an interactive CLI and reads the
 * screen it draws the same way under Bun and Deno. Every wait is bounded and fails with the current screen.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Buffer } from "node:buffer";
import { fileURLToPath } from "node:url";
import { nodeBin } from "./browser.ts";

const HOST = fileURLToPath(new URL("./pty-host.mjs", import.meta.url));

/** Options of one hosted program. */
export interface TerminalStart {
  /** The program and its arguments (run directly, not through a shell). */
  command: string[];
  cwd: string;
  /** The program's whole environment (nothing else is inherited). */
  env: Record<string, string>;
  width?: number;
  height?: number;
}

type Reply = { id?: number; error?: string; screen?: string; exited?: boolean; event?: string; code?: number; signal?: number };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One program in a pseudo-terminal; `kill()` ends it and its host. */
export class TerminalSession {
  private next = 1;
  private readonly waiting = new Map<number, (reply: Reply) => void>();
  private exit: { code?: number; signal?: number } | null = null;
  private fatal: string | null = null;
  private stderr = "";

  private constructor(private readonly host: ChildProcess) {
    let pending = "";
    host.stdout!.on("data", (chunk: Buffer) => {
      pending += Buffer.from(chunk).toString("utf8");
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        const reply = JSON.parse(pending.slice(0, nl)) as Reply;
        pending = pending.slice(nl + 1);
        if (reply.event === "exit") this.exit = { code: reply.code, signal: reply.signal };
        else if (reply.event === "fatal") this.fatal = reply.error ?? "the terminal host failed";
        else if (reply.id !== undefined) this.waiting.get(reply.id)?.(reply);
      }
    });
    host.stderr!.on("data", (chunk: Buffer) => (this.stderr += Buffer.from(chunk).toString("utf8")));
    host.on("error", (error) => (this.fatal = `cannot start the terminal host with ${nodeBin()}: ${error.message}`));
    host.on("close", (code) => {
      const why = this.fatal ?? `the terminal host exited (${code})${this.stderr ? `: ${this.stderr.trim()}` : ""}`;
      for (const resolve of this.waiting.values()) resolve({ error: why });
      this.waiting.clear();
    });
  }

  /** Starts `command` in a fresh pseudo-terminal of `width` × `height`; resolves once its host answers. */
  static async start(opts: TerminalStart): Promise<TerminalSession> {
    const [command, ...args] = opts.command;
    const options = { command, args, cwd: opts.cwd, env: opts.env, cols: opts.width ?? 200, rows: opts.height ?? 50 };
    const host = spawn(nodeBin(), [HOST, JSON.stringify(options)], { stdio: ["pipe", "pipe", "pipe"] });
    const session = new TerminalSession(host);
    await session.screen(); // the host has started the program (or said why not)
    return session;
  }

  /** Sends one request to the host; rejects with the host's error. */
  private request(body: Record<string, unknown>): Promise<Reply> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      if (this.host.exitCode !== null || this.host.stdin!.destroyed) return reject(new Error(this.fatal ?? "the terminal host is gone"));
      this.waiting.set(id, (reply) => {
        this.waiting.delete(id);
        if (reply.error !== undefined) reject(new Error(reply.error));
        else resolve(reply);
      });
      this.host.stdin!.write(`${JSON.stringify({ id, ...body })}\n`);
    });
  }

  /** The visible screen as plain text (trailing blank lines dropped). */
  async screen(): Promise<string> {
    return (await this.snapshot()).screen;
  }

  /** The screen, and whether the program had exited when it was taken (then it holds all its output). */
  private async snapshot(): Promise<{ screen: string; exited: boolean }> {
    const reply = await this.request({ op: "screen" });
    return { screen: reply.screen ?? "", exited: reply.exited === true };
  }

  /** True once the program has exited. */
  exited(): boolean {
    return this.exit !== null || this.host.exitCode !== null;
  }

  /** How the program exited (null while it runs). */
  exitStatus(): { code?: number; signal?: number } | null {
    return this.exit;
  }

  /** Changes the window's size, as a person resizing the terminal window does. */
  async resize(width: number, height: number): Promise<void> {
    await this.request({ op: "resize", cols: width, rows: height });
  }

  /** Types `text` literally. */
  async type(text: string): Promise<void> {
    await this.request({ op: "write", data: text });
  }

  /** Presses keys by name (Enter, Escape, Up, C-c, …), one at a time. */
  async press(...keys: string[]): Promise<void> {
    for (const key of keys) await this.request({ op: "key", key });
  }

  /**
   * Polls the screen every 100 ms until `test` holds, for at most `ms`; returns the screen that passed.
   * Fails with `what`, the time waited and the current screen; also fails early if the program exited.
   */
  async waitFor(what: string, test: RegExp | ((screen: string) => boolean), ms = 15_000): Promise<string> {
    const ok = typeof test === "function" ? test : (s: string) => test.test(s);
    const started = Date.now();
    for (;;) {
      const { screen, exited: dead } = await this.snapshot();
      if (ok(screen)) return screen;
      if (dead || Date.now() - started > ms) {
        throw new Error(`timed out after ${Date.now() - started} ms waiting for ${what}${dead ? " (the program exited)" : ""}; screen:\n${screen}`);
      }
      await sleep(100);
    }
  }

  /** Waits until the program has exited (bounded, like waitFor). */
  async waitForExit(ms = 10_000): Promise<void> {
    const started = Date.now();
    while (!this.exited()) {
      if (Date.now() - started > ms) throw new Error(`timed out after ${ms} ms waiting for the program to exit; screen:\n${await this.screen()}`);
      await sleep(100);
    }
  }

  /** Ends the program (if still running) and its host: closing its input makes the host kill the program and exit. Never throws. */
  kill(): void {
    this.host.stdin?.end();
    const stuck = setTimeout(() => this.host.exitCode === null && this.host.kill("SIGKILL"), 5_000);
    (stuck as { unref?: () => void }).unref?.();
  }
}

/**
 * Claude Code's prompt input: the text after "❯ " on the line between the last two horizontal rules of the
 * screen, or null when no input box is shown (a menu or dialog has replaced it).
 */
export function claudeInput(screen: string): string | null {
  const lines = screen.split("\n");
  const rules = lines.flatMap((l, i) => (/^─{20,}\s*$/.test(l) ? [i] : []));
  if (rules.length < 2) return null;
  const [a, b] = rules.slice(-2);
  if (b !== a + 2) return null;
  const m = /^❯\s?(.*)$/.exec(lines[a + 1]);
  return m === null ? null : m[1].trimEnd();
}

/**
 * Opens Claude Code's rewind list with Esc Esc (at an idle prompt). Two separate presses: sent together
 * they reach Claude Code as one "\x1b\x1b", and nothing on screen marks the first, so a short gap is the
 * only way to keep them apart; a list that does not show is asked for again, three times at most.
 */
export async function openRewindList(t: TerminalSession): Promise<void> {
  for (let attempt = 1;; attempt++) {
    await t.press("Escape");
    await sleep(150);
    await t.press("Escape");
    try {
      await t.waitFor("the rewind list after Esc Esc", /Restore the code and\/or conversation/, 3_000);
      return;
    } catch (e) {
      if (attempt === 3) throw e;
    }
  }
}
