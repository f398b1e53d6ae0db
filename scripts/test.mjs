#!/usr/bin/env node
// `npm test`: a preflight, the linter, the whole suite under Bun and, at the same time, what differs by runtime
// under Deno (EVERY_RUNTIME), each runtime running its files in parallel worker processes; then the files that
// cannot share the machine (SERIAL), one at a time; then the compiled binary's tests. `node scripts/test.mjs
// lint|bun|deno|binary` runs some parts; test files named after the parts narrow the Bun and Deno runs to those
// files (still in parallel, SERIAL ones after). Exits non-zero on the first failure, stopping what still runs.
// Everything the suite drives comes from `npm ci`: the preflight checks each piece first and names what is
// missing and how to get it, in one line each, before any test runs. The store tests need PostgreSQL:
// unless SESSIONTAP_TEST_PG_URL is set already, a throwaway cluster is started once here
// (scripts/pg-test-cluster.mjs), its URL exported to every part, and it is stopped and removed at the end,
// on failure and on Ctrl-C too.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { stripVTControlCharacters } from "node:util";
import { fileURLToPath } from "node:url";
import { PG_HINT, pgBinDir, startCluster } from "./pg-test-cluster.mjs";
import { CHROMIUM_HINT, ensureChromium } from "./test-chromium.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => `${root}node_modules/.bin/${name}`;
const args = process.argv.slice(2);
const parts = args.filter((a) => !a.endsWith(".ts"));
const only = args.filter((a) => a.endsWith(".ts"));
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

/**
 * The suites whose subject differs by runtime, run under Deno as well as Bun (docs/RUNTIMES.md "One test
 * suite on both runtimes"): serving and relaying (passthrough, the network-facing security suites), the
 * filesystem adapter and the processes around it (reliability, mirror, store: node:fs, Workers and the
 * PostgreSQL client on each runtime), output to pipes, the MCP server's stdio (its end and signals), the
 * viewer's server, the guard in the engine's Worker, and the real client through a tap. The rest — pure rules, reading commands over files, the
 * browser, the real client's own behaviour against the mirror — asks nothing of the runtime: once is enough.
 */
const EVERY_RUNTIME = [
  "test/passthrough/",
  "test/security/",
  "test/reliability/",
  "test/mirror/",
  "test/store/",
  "test/cli/output.test.ts",
  "test/cli/mcp.test.ts",
  "test/cli/secrets.test.ts",
  "test/unit/secrets.test.ts",
  "test/viewer/viewer.test.ts",
  "test/guard/tap-guard.test.ts",
  "test/e2e/claude-mirror.test.ts",
  "test/e2e/claude-secrets.test.ts",
];
const differsByRuntime = (file) => EVERY_RUNTIME.some((p) => (p.endsWith("/") ? file.startsWith(p) : file === p));

/**
 * Files that cannot share the machine with others: they run after the parallel group, one at a time, with
 * nothing else running, each named here with why.
 */
const SERIAL = new Set([
  // A 256 MiB answer relayed as fast as the loopback goes, asserting that the engine keeps up with the relay: with
  // the other files on the same two cores it fell behind and gave the answer up, as it is built to.
  "test/security/processes.test.ts",
  // Durability within 250 ms of a fresh tap's first answers is a wall-clock promise: with the other files on the same two cores
  // (a load of ~25) a first commit's few filesystem calls alone took longer.
  "test/reliability/first-moments.test.ts",
]);

/** How many files each runtime runs at once in the parallel group (SESSIONTAP_TEST_JOBS overrides Bun's, DENO_JOBS Deno's). */
const BUN_JOBS = process.env.SESSIONTAP_TEST_JOBS ?? "3";
const DENO_JOBS = process.env.DENO_JOBS ?? "2";
/**
 * Per-file durations of a full run (Bun's --timings format): Bun's --parallel starts the slowest files first
 * from it, and the Deno list is put in the same order. Refresh it after the suite grows or moves with
 * `SESSIONTAP_UPDATE_TIMINGS=1 node scripts/test.mjs bun` (Bun writes what it measured back into it).
 */
const TIMINGS = "test/timings.json";
/** The files slowest first, by TIMINGS (files it does not know go first: they may be slow). */
function slowestFirst(files) {
  let ms = {};
  try {
    ms = JSON.parse(readFileSync(`${root}${TIMINGS}`, "utf8")).files ?? {};
  } catch {
    // no timings yet: the order given
  }
  return [...files].sort((a, b) => (ms[b] ?? Infinity) - (ms[a] ?? Infinity));
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

/** The parts running now, so that a failed one stops the others. */
const running = new Set();

/**
 * Starts one part, echoing its output as it comes (each line behind `prefix` when other parts run beside it),
 * and resolves with its exit status and what it counted.
 */
function start(label, command, args, env = {}, prefix = "") {
  console.log(`\n=== ${label}: ${[command.replace(root, ""), ...args].join(" ")}`);
  const started = Date.now();
  // Its own process group, so that stopping it stops the runtime's workers and the children of its tests too.
  const child = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env }, detached: true });
  running.add(child);
  let output = "";
  const echo = (stream, sink) => {
    let partial = "";
    stream.on("data", (chunk) => {
      const text = chunk.toString("utf8");
      output += stripVTControlCharacters(text);
      if (prefix === "") return void sink.write(chunk);
      const lines = (partial + text).split("\n");
      partial = lines.pop();
      for (const line of lines) sink.write(`${prefix}${line}\n`);
    });
    stream.on("end", () => partial !== "" && sink.write(`${prefix}${partial}\n`));
  };
  echo(child.stdout, process.stdout);
  echo(child.stderr, process.stderr);
  return new Promise((resolve) =>
    child.on("close", (code) => {
      running.delete(child);
      const status = code ?? 1;
      const counted = count(output);
      totals.passed += counted.passed;
      totals.failed += counted.failed;
      console.log(
        `=== ${label}: ${status === 0 ? "passed" : "FAILED"} (${counted.passed} passed, ${counted.failed} failed) in ${
          ((Date.now() - started) / 1000).toFixed(1)
        } s`,
      );
      resolve(status);
    })
  );
}

/** Stops every part still running (its whole process group). */
function stopRunning() {
  for (const child of running) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  running.clear();
}

/** Ends the run on a failed part: stops the others, prints the closing line and exits with its status. */
function failed(status) {
  stopRunning();
  console.log(`\n${totals.passed} passed, ${Math.max(1, totals.failed)} failed`);
  stopCluster();
  process.exit(status);
}

/** Runs parts side by side (`[label, command, args, env]` each); the first to fail stops the rest. */
async function runTogether(parts) {
  const width = Math.max(...parts.map(([label]) => label.length));
  const prefix = (label) => (parts.length > 1 ? `${label.padEnd(width)} │ ` : "");
  await Promise.all(parts.map(async ([label, command, args, env]) => {
    const status = await start(label, command, args, env, prefix(label));
    if (status !== 0) failed(status);
  }));
}

/** Runs one part, echoing its output as it comes, and stops everything on failure. */
async function run(label, command, args, env = {}) {
  await runTogether([[label, command, args, env]]);
}

/** The first line of a command's output, or null when it does not run. */
function versionOf(command, args = ["--version"]) {
  const r = spawnSync(command, args, { cwd: root, encoding: "utf8", timeout: 60_000 });
  return r.status === 0 ? (r.stdout.trim().split("\n")[0] ?? "") : null;
}

/** Starts a program in a pseudo-terminal from the npm packages the interactive tests use, in Node as they do. */
function terminalWorks() {
  const probe = `
    const pty = require("@lydell/node-pty");
    require("@xterm/headless");
    const p = pty.spawn(process.execPath, ["-e", "process.stdout.write(String(process.stdout.isTTY))"], { cols: 80, rows: 24 });
    let out = "";
    p.onData((d) => (out += d));
    p.onExit(({ exitCode }) => process.exit(exitCode === 0 && out.includes("true") ? 0 : 1));`;
  const r = spawnSync(process.execPath, ["-e", probe], { cwd: root, encoding: "utf8", timeout: 30_000 });
  return r.status === 0 ? null : (r.stderr.trim().split("\n").find((l) => /Error/.test(l)) ?? `exit ${r.status ?? r.signal}`);
}

/**
 * Everything the selected parts drive, checked before any test runs: one line per missing piece, naming it
 * and how to get it. Unpacks Chromium on its first run.
 */
async function preflight() {
  const npm = "run `npm ci`";
  const missing = [];
  const found = [];
  const need = (what, version, hint) => (version === null ? missing.push(`${what} is missing: ${hint}`) : found.push(`${what} ${version}`));
  const tests = want("bun") || want("deno");
  // These put their native executable in place from an install script (package.json's allowScripts; the
  // `claude-code-next` alias is the package `@anthropic-ai/claude-code`, which npm matches it by).
  const scripted = (name) => `${npm} with install scripts allowed (the \`${name}\` dev dependency installs its executable from one)`;
  if (want("bun") || want("binary")) need("bun", versionOf(bin("bun")), scripted("bun"));
  if (want("deno") || want("lint")) need("deno", versionOf(bin("deno"))?.replace(/^deno /, "").replace(/ .*/, "") ?? null, scripted("deno"));
  if (tests) {
    // Both pinned Claude Code releases declare the bin `claude`; each is run from its own package.
    const claude = (dir) => versionOf(`${root}node_modules/${dir}/bin/claude.exe`)?.replace(/ .*/, "") ?? null;
    need("claude", claude("@anthropic-ai/claude-code"), scripted("@anthropic-ai/claude-code"));
    need("claude (newest)", claude("claude-code-next"), scripted("claude-code-next"));
    need("ccusage", versionOf(bin("ccusage"))?.replace(/^ccusage /, "") ?? null, `${npm} (the \`ccusage\` dev dependency)`);
  }
  if (tests || want("binary")) { // the binary's viewer runs in Chromium too
    need("playwright-core", existsSync(`${root}node_modules/playwright-core/package.json`) ? "ok" : null, `${npm} (the \`playwright-core\` dev dependency)`);
    try {
      need("chromium", (await ensureChromium()).executable.replace(root, ""), CHROMIUM_HINT);
    } catch (error) {
      missing.push(error.message);
    }
  }
  if (tests) {
    const terminal = terminalWorks();
    if (terminal === null) found.push("terminal (node-pty + xterm) ok");
    else {missing.push(
        `a terminal for the interactive Claude Code tests is missing (${terminal}): ${npm} (the \`@lydell/node-pty\` and \`@xterm/headless\` dev dependencies)`,
      );}
  }
  if (want("binary")) { // the npm packages' test publishes them to a registry on loopback
    need("verdaccio", existsSync(`${root}node_modules/verdaccio/package.json`) ? "ok" : null, `${npm} (the \`verdaccio\` dev dependency)`);
  }
  if ((tests || want("binary")) && !process.env.SESSIONTAP_TEST_PG_URL) {
    try {
      need("postgresql", versionOf(`${pgBinDir()}/initdb`)?.replace(/^.* /, "") ?? null, PG_HINT);
    } catch (error) {
      missing.push(error.message);
    }
  }
  if (missing.length > 0) {
    for (const line of missing) console.log(`=== preflight: ${line}`);
    console.log(`\n0 passed, ${missing.length} failed`);
    process.exit(1);
  }
  console.log(`=== preflight: ${found.join(", ")}`);
}

/** The cluster this run started (null when SESSIONTAP_TEST_PG_URL was given, or it could not start). */
let cluster = null;
function stopCluster() {
  cluster?.stop();
  cluster = null;
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => (stopRunning(), stopCluster(), process.exit(130)));
// However the run ends (a reader that went away makes a write throw), the cluster does not outlive it.
process.on("exit", () => (stopRunning(), stopCluster()));
await preflight();
if (want("lint")) {
  await run("lint", bin("deno"), ["lint"]);
  // One shape for every file (deno.json "fmt"): a file `npm run fmt` would change fails here.
  await run("format", bin("deno"), ["fmt", "--check"]);
  await run("typecheck", bin("tsc"), ["--noEmit", "-p", "."]);
}
// The tests run the repository's Node scripts (the Chromium unpacker, the terminal host) with this Node.
const testEnv = { SESSIONTAP_TEST_NODE: process.execPath };
if (!(want("bun") || want("deno") || want("binary"))) {
  // lint alone: no database
} else if (process.env.SESSIONTAP_TEST_PG_URL) {
  console.log(`=== postgres: using SESSIONTAP_TEST_PG_URL from the environment`);
} else {
  const started = Date.now();
  try {
    cluster = await startCluster();
    testEnv.SESSIONTAP_TEST_PG_URL = cluster.url;
    console.log(`=== postgres: a throwaway cluster on 127.0.0.1:${cluster.port} (${cluster.dir}), started in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    console.log(`=== postgres: could not start a cluster: ${error.message}`);
    console.log(`\n0 passed, 1 failed`);
    process.exit(1);
  }
}

const files = only.length > 0 ? only : testFiles();
// Files named on the command line run as asked; the whole suite runs under Deno only where the runtime matters.
const denoFiles = only.length > 0 ? only : files.filter(differsByRuntime);
const bunTest = (list, parallel) => [
  "test",
  "--timeout",
  "120000",
  // --no-isolate: one global per worker, as one `bun test` process had (with a fresh global per file, --parallel's
  // default, proxy mode's certificate library failed to load in most runs, before src/proxy/local-ca.ts loaded it after its polyfill).
  ...(parallel ? [`--parallel=${Math.min(Number(BUN_JOBS), list.length)}`, "--no-isolate", `--timings=${TIMINGS}`] : []),
  ...(parallel && process.env.SESSIONTAP_UPDATE_TIMINGS ? ["--update-timings"] : []),
  ...list.map((f) => `./${f}`),
];
const denoTest = (list, parallel) => ["test", "--allow-all", "--unstable-no-legacy-abort", "--no-check", ...(parallel ? ["--parallel"] : []), ...list];
// Both runtimes at once: their tests mostly wait on child processes, sockets and poll intervals, not the CPU.
const together = [];
const bunShared = files.filter((f) => !SERIAL.has(f));
const denoShared = slowestFirst(denoFiles.filter((f) => !SERIAL.has(f)));
if (want("bun") && bunShared.length > 0) together.push(["bun", bin("bun"), bunTest(bunShared, true), testEnv]);
if (want("deno") && denoShared.length > 0) together.push(["deno", bin("deno"), denoTest(denoShared, true), { ...testEnv, DENO_JOBS }]);
if (together.length > 0) await runTogether(together);
const bunAlone = files.filter((f) => SERIAL.has(f));
const denoAlone = denoFiles.filter((f) => SERIAL.has(f));
if (want("bun") && bunAlone.length > 0) await run("bun (alone)", bin("bun"), bunTest(bunAlone, false), testEnv);
if (want("deno") && denoAlone.length > 0) await run("deno (alone)", bin("deno"), denoTest(denoAlone, false), testEnv);
if (want("binary")) {
  await run("build", process.execPath, ["scripts/build.mjs"]);
  // The binary gets its own smoke tests, and the command-line suites that a user meets first: help and flags, whole output to pipes.
  // In parallel like the rest, the slowest first so that they do not end the part alone.
  const binaryTests = [
    "./test/binary/npm-packages.test.ts", // npx sessiontap and npm i -g sessiontap, through a registry on loopback
    "./test/e2e/claude-launcher.test.ts", // sessiontap claude with the real Claude Code, -p and interactive
    "./test/binary/smoke.test.ts",
    "./test/binary/providers.test.ts",
    "./test/binary/store.test.ts",
    "./test/binary/release.test.ts",
    "./test/binary/security.test.ts",
    "./test/cli/help.test.ts",
    "./test/cli/output.test.ts",
    "./test/cli/reading.test.ts", // search, usage and list as a user runs them
    "./test/cli/mcp.test.ts", // the MCP server, with the SDK's client
    "./test/e2e/claude-mcp.test.ts", // the MCP server, with the real Claude Code
    "./test/binary/viewer.test.ts", // the viewer's client as Bun minified it, in Chromium
    "./test/proxy/proxy-process.test.ts", // proxy mode: its CA and leaves made inside the binary
  ];
  const binaryEnv = { ...testEnv, SESSIONTAP_BINARY: `${root}dist/sessiontap` };
  await run("binary", bin("bun"), ["test", "--timeout", "120000", `--parallel=${BUN_JOBS}`, "--no-isolate", ...binaryTests], binaryEnv);
}
stopCluster();
// The one closing line CI reads, over every runtime's run.
console.log(`\n${totals.passed} passed, ${totals.failed} failed`);
