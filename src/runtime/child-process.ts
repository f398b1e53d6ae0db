/**
 * A program run in the foreground of this process's terminal (docs/DESIGN.md "The launcher"): it inherits
 * stdin, stdout and stderr, so its terminal is its own (raw mode, size, colours); the terminal sends
 * Ctrl-C, Ctrl-\ and window-size changes to the whole foreground process group, so the child gets them
 * from the terminal itself, and this process only passes on what is sent to it alone: SIGTERM and SIGHUP,
 * and SIGINT when it has no terminal that would have sent it to the child too. node:child_process, so it
 * behaves the same on Bun, on Deno and in the compiled binary.
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { constants } from "node:os";
import { isatty } from "node:tty";

/** How the child ended: its exit code, or the signal that ended it. */
export interface ChildExit {
  code: number | null;
  signal: string | null;
}

/** A started child, or why it could not start (ENOENT: no such program; EACCES: not executable). */
export type Started = { ok: true; pid: number; exited: Promise<ChildExit>; stop: () => void } | { ok: false; code: string; message: string };

/** The signals passed on to the child while it runs; SIGINT only without a terminal (see above). */
function forwarded(): NodeJS.Signals[] {
  if (process.platform === "win32") return []; // Windows delivers Ctrl-C to every process of the console
  // isatty(0), not process.stdin: creating that stream could start reading the terminal the child owns.
  return isatty(0) ? ["SIGTERM", "SIGHUP"] : ["SIGTERM", "SIGHUP", "SIGINT"];
}

/**
 * Starts `command args` with the terminal and `env`, passes signals on while it runs, and resolves how it
 * ended. SIGINT is held (not fatal to this process) while the child runs, so that the child decides what a
 * Ctrl-C means and this process outlives it to finish its own work.
 */
export function runInForeground(command: string, args: string[], env: Record<string, string>): Promise<Started> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: "inherit", env });
    const pass = (signal: NodeJS.Signals) => {
      try {
        child.kill(signal);
      } catch {
        // it has just exited: nothing to pass on
      }
    };
    const hold = () => {};
    const passing = forwarded();
    const install = () => {
      for (const s of passing) process.on(s, pass);
      if (!passing.includes("SIGINT")) process.on("SIGINT", hold);
    };
    const remove = () => {
      for (const s of passing) process.off(s, pass);
      process.off("SIGINT", hold);
    };
    child.once("error", (error: NodeJS.ErrnoException) => {
      remove();
      resolve({ ok: false, code: error.code ?? "ERROR", message: error.message });
    });
    child.once("spawn", () => {
      install();
      resolve({
        ok: true,
        pid: child.pid!,
        stop: () => pass("SIGTERM"),
        exited: new Promise((done) =>
          child.once("exit", (code, signal) => {
            remove();
            done({ code, signal });
          })
        ),
      });
    });
  });
}

/** The exit status a shell reports for `exit`: the code, or 128 + the signal's number. */
export function shellStatus(exit: ChildExit): number {
  if (exit.code !== null) return exit.code;
  const number = exit.signal === null ? undefined : (constants.signals as Record<string, number>)[exit.signal];
  return 128 + (number ?? 0);
}
