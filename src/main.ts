/**
 * Entry point: reads the process's arguments and environment and runs one command. No default export:
 * Bun would serve it on :3000 (RUNTIME-NOTES "Serving").
 */
import process from "node:process";
import { homedir } from "node:os";
import { main } from "./cli/main.ts";
import { commandArgs } from "./runtime/index.ts";

const stopSignal = new Promise<string>((resolve) => {
  process.once("SIGINT", () => resolve("SIGINT"));
  process.once("SIGTERM", () => resolve("SIGTERM"));
});

const code = await main(commandArgs(), process.env, {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  home: process.env.HOME ?? homedir(),
  stopSignal,
});
process.exit(code);
