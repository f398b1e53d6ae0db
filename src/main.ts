/**
 * Entry point: reads the process's arguments and environment and runs one command. No default export:
 * Bun would serve it on :3000 (RUNTIME-NOTES "Serving").
 */
import process from "node:process";
import { homedir } from "node:os";
import { main } from "./cli/main.ts";
import { commandArgs } from "./runtime/index.ts";

const stopSignal = new Promise<string>((resolve) => {
  // Windows has no SIGTERM (Deno refuses to listen for it there): a service manager stops a console
  // program with Ctrl-C or Ctrl-Break, which arrive as SIGINT and SIGBREAK.
  for (const signal of process.platform === "win32" ? ["SIGINT", "SIGBREAK"] : ["SIGINT", "SIGTERM"]) {
    process.once(signal, () => resolve(signal));
  }
});

const code = await main(commandArgs(), process.env, {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  home: process.env.HOME ?? homedir(),
  stopSignal,
});
process.exit(code);
