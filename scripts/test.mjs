#!/usr/bin/env node
// `npm test`: the whole suite under Bun, then the same files under Deno, then the compiled binary's smoke
// test. `node scripts/test.mjs bun|deno|binary` runs one part. Exits non-zero on the first failure.
// The store tests (issue 7) need PostgreSQL: unless SESSIONTAP_TEST_PG_URL is set already, a throwaway
// cluster is started once here (scripts/pg-test-cluster.mjs), its URL exported to every part, and it is
// stopped and removed at the end, on failure and on Ctrl-C too.
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startCluster } from "./pg-test-cluster.mjs";

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
    stopCluster();
    process.exit(status);
  }
}

/** The cluster this run started (null when SESSIONTAP_TEST_PG_URL was given, or it could not start). */
let cluster = null;
function stopCluster() {
  cluster?.stop();
  cluster = null;
}
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => (stopCluster(), process.exit(130)));
const pgEnv = {};
if (process.env.SESSIONTAP_TEST_PG_URL) {
  console.log(`=== postgres: using SESSIONTAP_TEST_PG_URL from the environment`);
} else {
  const started = Date.now();
  try {
    cluster = await startCluster();
    pgEnv.SESSIONTAP_TEST_PG_URL = cluster.url;
    console.log(`=== postgres: a throwaway cluster on 127.0.0.1:${cluster.port} (${cluster.dir}), started in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    // The store tests then fail, each saying why; every other test still runs.
    console.log(`=== postgres: could not start a cluster: ${error.message}`);
  }
}

const files = testFiles();
if (want("bun")) await run("bun", bin("bun"), ["test", "--timeout", "120000", ...files.map((f) => `./${f}`)], pgEnv);
if (want("deno")) await run("deno", bin("deno"), ["test", "--allow-all", "--unstable-no-legacy-abort", "--no-check", ...files], pgEnv);
if (want("binary")) {
  await run("build", process.execPath, ["scripts/build.mjs"]);
  const binaryTests = ["./test/binary/smoke.test.ts", "./test/binary/store.test.ts", "./test/binary/security.test.ts"];
  await run("binary", bin("bun"), ["test", "--timeout", "120000", ...binaryTests], { ...pgEnv, SESSIONTAP_BINARY: `${root}dist/sessiontap` });
}
stopCluster();
// The one closing line CI reads, over every runtime's run.
console.log(`\n${totals.passed} passed, ${totals.failed} failed`);
