// Drives a terminal program in a detached tmux session on a private tmux server (`tmux -L <socket>`), so a
// test can type into an interactive CLI and read its screen. node:child_process only, so it behaves the
// same under Bun and Deno. Every wait is bounded and fails with the current screen.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";

/** The Debian/Ubuntu package that provides tmux (CI: `apt-get install -y tmux`). */
export const TMUX_APT_PACKAGE = "tmux";

/** Options of one tmux-hosted program. */
export interface TmuxStart {
  /** The program and its arguments (run directly, not through a shell). */
  command: string[];
  cwd: string;
  /** The whole environment of the tmux server and so of the program (nothing else is inherited). */
  env: Record<string, string>;
  width?: number;
  height?: number;
}

/** Finds tmux on PATH or in /usr/bin; throws a clear error naming the package to install when it is missing. */
export function requireTmux(): string {
  for (const bin of ["tmux", "/usr/bin/tmux", "/usr/local/bin/tmux"]) {
    const r = spawnSync(bin, ["-V"], { encoding: "utf8" });
    if (r.status === 0) return bin;
  }
  throw new Error(`tmux is not installed (needed to drive the interactive Claude Code CLI): install the apt package "${TMUX_APT_PACKAGE}" (apt-get install -y ${TMUX_APT_PACKAGE})`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One detached tmux session on its own tmux server; `kill()` stops that server and nothing else. */
export class TmuxSession {
  /** The server's socket file (removed by kill()). */
  socketPath = "";

  private constructor(readonly bin: string, readonly socket: string, readonly name: string) {}

  /** Starts `command` in a new detached session of a fresh private server; the pane stays readable after the program exits. */
  static start(opts: TmuxStart): TmuxSession {
    const bin = requireTmux();
    const socket = `sessiontap-${process.pid}-${randomBytes(4).toString("hex")}`;
    const s = new TmuxSession(bin, socket, "main");
    const { TMUX: _t, TMUX_PANE: _p, ...env } = opts.env;
    s.run(
      ["-f", "/dev/null", "new-session", "-d", "-s", s.name, "-x", String(opts.width ?? 200), "-y", String(opts.height ?? 50), "-c", opts.cwd, ...opts.command,
        ";", "set-option", "-t", s.name, "remain-on-exit", "on"],
      env,
    );
    s.socketPath = s.run(["display-message", "-p", "#{socket_path}"]).trim();
    return s;
  }

  /** Runs a tmux command against this server; throws with tmux's stderr when it fails. */
  run(args: string[], env?: Record<string, string>): string {
    const r = spawnSync(this.bin, ["-L", this.socket, ...args], { encoding: "utf8", env: env ?? process.env as Record<string, string> });
    if (r.status !== 0) throw new Error(`tmux ${args.slice(0, 3).join(" ")} failed (${r.status}): ${r.stderr || r.error}`);
    return r.stdout;
  }

  /** The visible screen as plain text (trailing blank lines dropped). */
  screen(): string {
    try {
      return this.run(["capture-pane", "-p", "-t", this.name]).replace(/\s+$/, "");
    } catch (e) {
      return `<no screen: ${(e as Error).message}>`;
    }
  }

  /** True once the program in the pane has exited. */
  exited(): boolean {
    try {
      return this.run(["display-message", "-p", "-t", this.name, "#{pane_dead}"]).trim() === "1";
    } catch {
      return true;
    }
  }

  /** Types `text` literally (no key names). */
  type(text: string): void {
    this.run(["send-keys", "-t", this.name, "-l", text]);
  }

  /** Presses keys by tmux name (Enter, Escape, Up, C-c, …), one send-keys call each. */
  press(...keys: string[]): void {
    for (const key of keys) this.run(["send-keys", "-t", this.name, key]);
  }

  /**
   * Polls the screen every 100 ms until `test` holds, for at most `ms`; returns the screen that passed.
   * Fails with `what`, the time waited and the current screen; also fails early if the program exited.
   */
  async waitFor(what: string, test: RegExp | ((screen: string) => boolean), ms = 15_000): Promise<string> {
    const ok = typeof test === "function" ? test : (s: string) => test.test(s);
    const started = Date.now();
    for (;;) {
      const screen = this.screen();
      if (ok(screen)) return screen;
      const dead = this.exited();
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
      if (Date.now() - started > ms) throw new Error(`timed out after ${ms} ms waiting for the program to exit; screen:\n${this.screen()}`);
      await sleep(100);
    }
  }

  /** Stops this session's private tmux server (and the program, if still running) and removes its socket. Never throws. */
  kill(): void {
    spawnSync(this.bin, ["-L", this.socket, "kill-server"], { encoding: "utf8" });
    if (this.socketPath.endsWith(`/${this.socket}`)) rmSync(this.socketPath, { force: true });
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
