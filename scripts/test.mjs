#!/usr/bin/env node
// `npm test`: the whole suite under Bun, then the same files under Deno, then the compiled binary's smoke
// test. `node scripts/test.mjs bun|deno|binary` runs one part. Exits non-zero on the first failure.
import { spawn } from "node:child_process";
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

const totals = { passed: 0, failed: 0 };

/** Counts tests from a runner's closing lines: Bun's " N pass / N fail", Deno's "ok | N passed (M steps) | K failed". */
function count(output) {
  const bunPass = /^\s*(\d+) pass$/m.exec(output);
  if (bunPass) return { passed: Number(bunPass[1]), failed: Number(/^\s*(\d+) fail$/m.exec(output)?.[1] ?? 0) };
  const deno = /(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed(?: \((\d+) steps?\))?/.exec(output);
  if (deno) return { passed: Number(deno[2] ?? deno[1]), failed: Number(deno[4] ?? deno[3]) };
  return { passed: 0, failed: 0 };
}

/** Runs one part, echoing its output as it comes, and stops everything on failure. */
async function run(label, command, args, env = {}) {
  console.log(`\n=== ${label}: ${[command.replace(root, ""), ...args].join(" ")}`);
  const started = Date.now();
  const child = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let output = "";
  const echo = (stream, sink) => stream.on("data", (chunk) => {
    output += chunk.toString("utf8").replace(/\x1b\[[0-9;]*m/g, "");
    sink.write(chunk);
  });
  echo(child.stdout, process.stdout);
  echo(child.stderr, process.stderr);
  const status = await new Promise((resolve) => child.on("close", (code) => resolve(code ?? 1)));
  const counted = count(output);
  totals.passed += counted.passed;
  totals.failed += counted.failed;
  console.log(`=== ${label}: ${status === 0 ? "passed" : "FAILED"} (${counted.passed} passed, ${counted.failed} failed) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (status !== 0) {
    console.log(`\n${totals.passed} passed, ${Math.max(1, totals.failed)} failed`);
    process.exit(status);
  }
}

const files = testFiles();
if (want("bun")) await run("bun", bin("bun"), ["test", "--timeout", "120000", ...files.map((f) => `./${f}`)]);
if (want("deno")) await run("deno", bin("deno"), ["test", "--allow-all", "--unstable-no-legacy-abort", "--no-check", ...files]);
if (want("binary")) {
  await run("build", process.execPath, ["scripts/build.mjs"]);
  await run("binary", bin("bun"), ["test", "--timeout", "120000", "./test/binary/smoke.test.ts"], { SESSIONTAP_BINARY: `${root}dist/sessiontap` });
}
// The one closing line CI reads, over every runtime's run.
console.log(`\n${totals.passed} passed, ${totals.failed} failed`);
