#!/usr/bin/env node
// Builds dist/sessiontap: one self-contained executable (bun build --compile), no runtime needed on the target.
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bun = `${root}node_modules/.bin/bun`;
const target = process.env.SESSIONTAP_BUILD_TARGET; // e.g. bun-linux-arm64 for a cross build
// The mirror engine's Worker script is a second entry point: the binary embeds it, and main.ts names it
// by a URL relative to itself (docs/RUNTIMES.md "Compiling"). --format=esm is what lets --bytecode resolve it.
const args = ["build", "--compile", "--minify", "--bytecode", "--format=esm", "src/main.ts", "src/mirror-worker.ts", "--outfile", "dist/sessiontap"];
if (target) args.push(`--target=${target}`);
mkdirSync(`${root}dist`, { recursive: true });
const run = spawnSync(bun, args, { cwd: root, stdio: "inherit" });
process.exit(run.status ?? 1);
