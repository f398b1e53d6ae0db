#!/usr/bin/env node
// `npm test`: the whole suite under Bun, then the same files under Deno, then the compiled binary's smoke
// test. `node scripts/test.mjs bun|deno|binary` runs one part. Exits non-zero on the first failure.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => `${root}node_modules/.bin/${name}`;
const parts = process.argv.slice(2);
const want = (name) => parts.length === 0 || parts.includes(name);

/** Every *.test.ts under test/, except the binary's own smoke test. */
function testFiles(dir = "test") {
  const out = [];
  for (const name of readdirSync(`${root}${dir}`).sort()) {
    const path = `${dir}/${name}`;
    if (statSync(`${root}${path}`).isDirectory()) {
      if (path !== "test/binary") out.push(...testFiles(path));
    } else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

function run(label, command, args, env = {}) {
  console.log(`\n=== ${label}: ${[command.replace(root, ""), ...args].join(" ")}`);
  const started = Date.now();
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", env: { ...process.env, ...env } });
  console.log(`=== ${label}: ${result.status === 0 ? "passed" : "FAILED"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const files = testFiles();
if (want("bun")) run("bun", bin("bun"), ["test", "--timeout", "120000", ...files.map((f) => `./${f}`)]);
if (want("deno")) run("deno", bin("deno"), ["test", "--allow-all", "--unstable-no-legacy-abort", "--no-check", ...files]);
if (want("binary")) {
  run("build", process.execPath, ["scripts/build.mjs"]);
  run("binary", bin("bun"), ["test", "--timeout", "120000", "./test/binary/smoke.test.ts"], { SESSIONTAP_BINARY: `${root}dist/sessiontap` });
}
