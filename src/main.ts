/**
 * Entry point: reads the process's arguments and environment and runs one command. Exits only once the
 * command's output is written whole (a pipe takes it at the reader's pace), and non-zero when it could
 * not be. No default export: Bun would serve it on :3000 (docs/RUNTIMES.md "Serving").
 */
import process from "node:process";
import { homedir } from "node:os";
import { main } from "./cli/main.ts";
import { awaitedOutput, commandArgs } from "./runtime/index.ts";
import { describe } from "./utils/describe-error.ts";

const stdout = awaitedOutput(process.stdout);
const stderr = awaitedOutput(process.stderr);
const stopSignal = new Promise<string>((resolve) => {
  // Windows has no SIGTERM (Deno refuses to listen for it there): a service manager stops a console
  // program with Ctrl-C or Ctrl-Break, which arrive as SIGINT and SIGBREAK.
  // Heard for as long as the process runs: a second signal while it stops (bounded by the drain) is a
  // copy — a wrapper such as the npm package's bin passing on what the process group got too — and is
  // ignored rather than killing the tap before it saved what it holds.
  for (const signal of process.platform === "win32" ? ["SIGINT", "SIGBREAK"] : ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => resolve(signal));
  }
});

let code: number;
try {
  code = await main(commandArgs(), process.env, {
    stdout: (text) => stdout.write(text),
    stderr: (text) => stderr.write(text),
    home: process.env.HOME ?? homedir(),
    stopSignal,
    // Resolved here, by the entry point: inside a compiled binary every module shares its URL.
    workerUrl: new URL("./mirror-worker.ts", import.meta.url),
    viewerWorkerUrl: new URL("./viewer-worker.ts", import.meta.url),
    isTTY: process.stdout.isTTY === true,
  });
} catch (error) {
  // main() turns every error a user can cause into one line and an exit status; this is a bug.
  stderr.write(`sessiontap: internal error: ${describe(error)}\n`);
  code = 1;
}
const lost = await stdout.finished();
if (lost !== null) {
  stderr.write(`sessiontap: the output was not written whole (${describe(lost)}): the reader went away\n`);
  if (code === 0) code = 1;
}
await stderr.finished();
process.exit(code);
