// The entry point: runs one command, and exits once its output is written whole (non-zero when it could not be).
// No default export: Bun would serve it on :3000 (docs/RUNTIMES.md "Serving").
import process from "node:process";
import { homedir } from "node:os";
import { main } from "./cli/main.ts";
import { awaitedOutput, commandArgs } from "./runtime/index.ts";
import { describe } from "./utils/describe-error.ts";

const stdout = awaitedOutput(process.stdout);
const stderr = awaitedOutput(process.stderr);
// Heard for the process's whole life: a second signal while it stops is a wrapper's copy (the npm bin passes on what the group got).
const stopSignal = new Promise<string>((resolve) => {
  for (const signal of process.platform === "win32" ? ["SIGINT", "SIGBREAK"] : ["SIGINT", "SIGTERM"]) process.on(signal, () => resolve(signal));
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
