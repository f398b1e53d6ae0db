#!/usr/bin/env node
// Builds dist/sessiontap: one self-contained executable (bun build --compile), no runtime needed on the target.
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { compileArgs } from "./compile-args.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const bun = `${root}node_modules/.bin/bun`;
const target = process.env.SESSIONTAP_BUILD_TARGET; // e.g. bun-linux-arm64 for a cross build
const args = compileArgs("dist/sessiontap", target);
mkdirSync(`${root}dist`, { recursive: true });
const run = spawnSync(bun, args, { cwd: root, stdio: "inherit" });
process.exit(run.status ?? 1);
