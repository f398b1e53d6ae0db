#!/usr/bin/env node
// `npm run bench`: the tap against a direct connection, side by side in one run (issue 8). Starts a
// loopback stub upstream and a load driver, then for each repetition sends the same load direct, through
// the compiled tap (Bun) with the mirror off and on, through the tap under Deno with the mirror on, and
// through nginx when it is installed; then measures memory at 1, 100 and 1,000 concurrent streams on fresh
// processes, and the mirror's in-process costs under Bun. Prints the tables and writes them to
// docs/BENCHMARKS.md. Loopback only; every loop is bounded in count and in time. See --help.
import { fork, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, freemem, release, tmpdir, totalmem } from "node:os";
import { isAbsolute, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { cpuMs, memSum } from "./proc.mjs";
import { figuresOf, memTable, num, quantile, summarize, table } from "./report.mjs";
import { installNginx, logger, nginxBinary, startTarget, stopChild, TARGETS } from "./targets.mjs";
import { verdicts } from "./verdicts.mjs";
import { ARCHIVE_QUERY, copyArchive, writeArchive } from "./archive.mjs";
import { answerSize } from "./workload.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const HELP = `npm run bench [-- options]

  --quick            about a minute: one repetition, fewer requests (does not write docs/ unless --write)
  --with-nginx       install Debian's nginx with apt-get if missing, and include it (loopback only)
  --no-nginx         leave nginx out even when it is installed
  --targets LIST     comma-separated subset of: ${TARGETS.map((t) => t.name).join(", ")} (direct is always run)
  --reps N           repetitions of the latency/throughput scenarios (default 3, quick 1)
  --mem-reps N       repetitions of the memory scenarios (default 2, quick 1)
  --out FILE         where to write the results section (default docs/BENCHMARKS.md)
  --write / --no-write   write (or not) the results section (default: write, except with --quick)
  --json FILE        also save every raw sample as JSON
  --no-build         use dist/sessiontap as it is (default: rebuild when src/ is newer)
  --keep             keep the scratch directory (mirror trees, nginx logs)
  --quiet            no progress lines on stderr`;

/** Parsed command line. */
function parseArgs(argv) {
  const o = {
    quick: false,
    withNginx: false,
    noNginx: false,
    targets: null,
    reps: null,
    memReps: null,
    out: "docs/BENCHMARKS.md",
    write: null,
    json: null,
    build: true,
    keep: false,
    quiet: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--quick") o.quick = true;
    else if (a === "--with-nginx") o.withNginx = true;
    else if (a === "--no-nginx") o.noNginx = true;
    else if (a === "--targets") o.targets = value().split(",").map((s) => s.trim()).filter(Boolean);
    else if (a === "--reps") o.reps = Math.max(1, Math.min(20, Number(value()) | 0));
    else if (a === "--mem-reps") o.memReps = Math.max(1, Math.min(10, Number(value()) | 0));
    else if (a === "--out") o.out = value();
    else if (a === "--write") o.write = true;
    else if (a === "--no-write") o.write = false;
    else if (a === "--json") o.json = value();
    else if (a === "--no-build") o.build = false;
    else if (a === "--keep") o.keep = true;
    else if (a === "--quiet") o.quiet = true;
    else if (a === "--help" || a === "-h") {
      console.log(HELP);
      process.exit(0);
    } else throw new Error(`unknown option ${a} (see --help)`);
  }
  return o;
}

let opts;
try {
  opts = parseArgs(process.argv.slice(2));
} catch (error) {
  console.error(`bench: ${error.message}`);
  process.exit(2);
}
const log = logger(opts.quiet);
const Q = opts.quick;
/** Counts and bounds of each scenario (full run / --quick). */
const PLAN = {
  reps: opts.reps ?? (Q ? 1 : 3),
  memReps: opts.memReps ?? (Q ? 1 : 2),
  warm: { short: Q ? 15 : 30, long: Q ? 3 : 5, tool: Q ? 2 : 3 },
  short: Q ? 40 : 200,
  long1: Q ? 4 : 15,
  long100PerSlot: 1,
  tool: Q ? 4 : 15,
  history: Q ? 2 : 8,
  // Memory and concurrency: the 250-event answer at a fast model's pace, bursts of K events every D ms
  // ("K,D": 50 events/s, ~5 s a stream; 100/s with --quick), so every stream stays in flight; 1,000
  // streams in the full run only.
  pace: Q ? "10,100" : "5,100",
  memLevels: Q ? [1, 100] : [1, 100, 1000],
  budgetMs: Q ? 30_000 : 45_000,
  timeoutMs: Q ? 30_000 : 45_000,
  mem1000TimeoutMs: 30_000,
  // The gap scenario: a paced stream of one event every 10 ms (~2.6 s), beside at most this many history requests.
  gapPace: "1,10",
  gapHistory: Q ? 10 : 24,
  // ... and beside the viewer's search over an archive of this many sessions (40 records of ~1 KB each).
  archiveSessions: 1000,
  // A soft bound on the whole run: no new repetition starts after it.
  deadlineMs: Q ? 150_000 : 540_000,
};
const started = Date.now();
const children = new Set();

/** Kills what this run started (by handle, never by name) and exits. */
async function cleanupAndExit(code) {
  for (const c of children) await stopChild(c, "SIGTERM", 2000).catch(() => {});
  process.exit(code);
}
process.on("SIGINT", () => void cleanupAndExit(130));
process.on("SIGTERM", () => void cleanupAndExit(143));

/** The output of a command, trimmed ("" when it fails). */
function sh(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 20_000 });
  return r.status === 0 ? `${r.stdout}${r.stderr}`.trim() : "";
}

/** Newest mtime under a directory (for "is the binary older than src/?"). */
function newest(dir) {
  let t = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    t = Math.max(t, s.isDirectory() ? newest(p) : s.mtimeMs);
  }
  return t;
}

/** Fresh-memory cost here: time to touch 64 MiB of new pages (a VM can make this far dearer than bare metal). */
function pageFaultProbe() {
  const times = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    const b = new Uint8Array(64 * 1024 * 1024);
    for (let j = 0; j < b.length; j += 4096) b[j] = 1;
    times.push(performance.now() - t);
  }
  const ms = quantile(times, 0.5);
  return { msPer64MiB: ms, usPerPage: (ms * 1000) / 16384 };
}

/** What the machine and the runtimes are. */
function machine() {
  const cpuModel = (() => {
    try {
      return /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? cpus()[0]?.model ?? "?";
    } catch {
      return cpus()[0]?.model ?? "?";
    }
  })();
  const nginx = nginxBinary();
  const git = sh("git", ["-C", ROOT, "rev-parse", "--short", "HEAD"]);
  const dirty = sh("git", ["-C", ROOT, "status", "--porcelain", "--", "src"]) !== "";
  return {
    nproc: sh("nproc", []) || String(cpus().length),
    memGiB: (totalmem() / 2 ** 30).toFixed(1),
    freeGiB: (freemem() / 2 ** 30).toFixed(1),
    cpu: cpuModel,
    kernel: release(),
    os: (() => {
      try {
        return /PRETTY_NAME="([^"]*)"/.exec(readFileSync("/etc/os-release", "utf8"))?.[1] ?? "?";
      } catch {
        return "?";
      }
    })(),
    node: process.version,
    bun: sh(join(ROOT, "node_modules/.bin/bun"), ["--version"]),
    deno: sh(join(ROOT, "node_modules/.bin/deno"), ["--version"]).split("\n")[0],
    nginx: nginx ? sh(nginx, ["-v"]).replace(/^nginx version: /, "") : "not installed",
    commit: git ? `${git}${dirty ? " (src/ with uncommitted changes)" : ""}` : "?",
    pageFault: pageFaultProbe(),
  };
}

/** Starts the stub upstream; resolves with its child and port. */
async function startStub() {
  const child = spawn(process.execPath, [join(ROOT, "scripts/bench/stub.mjs")], { stdio: ["ignore", "pipe", "inherit", "ipc"] });
  children.add(child);
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("stub did not start within 10 s")), 10_000);
    let out = "";
    child.stdout.on("data", (b) => {
      out += b;
      const m = /listening (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once("exit", (c) => reject(new Error(`stub exited ${c}`)));
  });
  return { child, port };
}

/** Starts the load driver; resolves with `call(msg)` (one request/reply over IPC) and its child. */
async function startDriver() {
  const child = fork(join(ROOT, "scripts/bench/driver.mjs"), [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  children.add(child);
  await new Promise((resolve, reject) => {
    child.once("message", resolve);
    child.once("exit", (c) => reject(new Error(`driver exited ${c}`)));
  });
  let id = 0;
  const call = (msg) =>
    new Promise((resolve, reject) => {
      const mine = ++id;
      const onMessage = (m) => {
        if (m.id !== mine) return;
        child.off("message", onMessage);
        if (m.error) reject(new Error(m.error));
        else resolve(m.result);
      };
      child.on("message", onMessage);
      child.send({ ...msg, id: mine });
    });
  return { child, call };
}

/** The tap's /_tap/health mirror counters (null for targets that are not the tap). */
async function mirrorStats(target) {
  if (!target.name.includes("-")) return null;
  try {
    const res = await fetch(`http://127.0.0.1:${target.port}/_tap/health`, { signal: AbortSignal.timeout(5000) });
    return (await res.json()).mirror ?? null;
  } catch {
    return null;
  }
}

/** Runs one scenario through `target`, with the CPU time of the target, the stub and the driver around it. */
async function scenario(ctx, target, spec) {
  const pids = target.pids();
  const before = { target: pids.reduce((n, p) => n + (cpuMs(p) ?? 0), 0), stub: cpuMs(ctx.stub.child.pid), driver: cpuMs(ctx.driver.child.pid) };
  const result = await ctx.driver.call({ cmd: "run", spec: { port: target.port, budgetMs: PLAN.budgetMs, timeoutMs: PLAN.timeoutMs, ...spec } });
  const after = { target: pids.reduce((n, p) => n + (cpuMs(p) ?? 0), 0), stub: cpuMs(ctx.stub.child.pid), driver: cpuMs(ctx.driver.child.pid) };
  result.cpu = { target: after.target - before.target, stub: after.stub - before.stub, driver: after.driver - before.driver };
  if (result.errors > 0) log(`  ${target.name} ${spec.prefix}: ${result.errors} failed (${result.firstError})`);
  return result;
}

/** One repetition of the latency/throughput scenarios on one target (a fresh process, warmed first). */
async function throughputRep(ctx, name, rep) {
  const dir = join(ctx.scratch, `r${rep}-${name}`);
  // A tap's viewer reads its mirror root (mirror off: the default one under HOME): the archive goes there.
  const tap = /^(bun|deno)-/.test(name);
  if (tap) copyArchive(ctx.archive, name.endsWith("-on") ? join(dir, "mirror") : join(dir, ".claude/session-mirrors"));
  const target = await startTarget(name, { root: ROOT, scratch: dir, upstreamPort: ctx.stub.port, binary: ctx.binary, log });
  const p = `r${rep}-${name}`;
  if (target.child) children.add(target.child);
  try {
    // Warm-up (JIT, connection pools, the history session's first request): not measured.
    await scenario(ctx, target, { answer: "short", body: "conversation", concurrency: 1, perSlot: PLAN.warm.short, prefix: `${p}-warm` });
    await scenario(ctx, target, { answer: "long", body: "single", concurrency: 1, perSlot: PLAN.warm.long, prefix: `${p}-warm` });
    await scenario(ctx, target, { answer: "tool", body: "single", concurrency: 1, perSlot: PLAN.warm.tool, prefix: `${p}-warm` });
    const r = {};
    r.historyCold = await scenario(ctx, target, { answer: "short", body: "history", concurrency: 1, perSlot: 2, offset: 0, prefix: `${p}-hist` });
    r.short = await scenario(ctx, target, { answer: "short", body: "conversation", concurrency: 1, perSlot: PLAN.short, prefix: `${p}-short`, turns: 10 });
    r.long1 = await scenario(ctx, target, { answer: "long", body: "single", concurrency: 1, perSlot: PLAN.long1, prefix: `${p}-long1`, hash: true });
    r.long100 = await scenario(ctx, target, { answer: "long", body: "single", concurrency: 100, perSlot: PLAN.long100PerSlot, prefix: `${p}-long100` });
    r.tool = await scenario(ctx, target, { answer: "tool", body: "single", concurrency: 1, perSlot: PLAN.tool, prefix: `${p}-tool`, hash: true });
    r.history = await scenario(ctx, target, { answer: "short", body: "history", concurrency: 1, perSlot: PLAN.history, offset: 2, prefix: `${p}-hist` });
    // What a concurrent stream feels: its largest gap between events, alone, then beside long-history
    // requests (their session warmed first: the steady state, one new exchange each).
    r.gapAlone = await ctx.driver.call({ cmd: "gap", spec: { port: target.port, pace: PLAN.gapPace, withHistory: false, prefix: `${p}-gap0` } });
    await scenario(ctx, target, { answer: "short", body: "history", concurrency: 1, perSlot: 1, offset: 0, prefix: `${p}-gap` });
    r.gapLoaded = await ctx.driver.call({
      cmd: "gap",
      spec: { port: target.port, pace: PLAN.gapPace, withHistory: true, history: PLAN.gapHistory, offset: 1, prefix: `${p}-gap` },
    });
    // ... and beside the viewer searching the whole archive, one search after another.
    if (tap) {
      r.gapSearch = await ctx.driver.call({
        cmd: "gap",
        spec: { port: target.port, pace: PLAN.gapPace, search: `/_tap/api/search?q=${ARCHIVE_QUERY}`, history: 100, prefix: `${p}-gaps` },
      });
    }
    r.mirror = await mirrorStats(target);
    r.rss = memSum(target.pids());
    return r;
  } finally {
    await ctx.driver.call({ cmd: "reset" });
    await target.stop();
    children.delete(target.child);
  }
}

/** One repetition of the memory scenarios on one target: idle, then 1, 100 and 1,000 paced streams. */
async function memoryRep(ctx, name, rep, skip1000) {
  const target = await startTarget(name, { root: ROOT, scratch: join(ctx.scratch, `m${rep}-${name}`), upstreamPort: ctx.stub.port, binary: ctx.binary, log });
  const p = `m${rep}-${name}`;
  const m = {};
  if (target.child) children.add(target.child);
  try {
    await new Promise((r) => setTimeout(r, 300));
    const mib = () => {
      const s = memSum(target.pids());
      return { rss: s.rss / 1024, hwm: s.hwm / 1024 };
    };
    m.idle = target.pids().length ? mib().rss : NaN;
    for (const level of PLAN.memLevels) {
      if (level === 1000 && skip1000) {
        m.skipped1000 = true;
        break;
      }
      const r = await scenario(ctx, target, {
        answer: "paced",
        body: "single",
        concurrency: level,
        perSlot: 1,
        prefix: `${p}-c${level}`,
        pace: PLAN.pace,
        timeoutMs: level === 1000 ? PLAN.mem1000TimeoutMs : PLAN.timeoutMs,
      });
      m[`hwm${level}`] = target.pids().length ? mib().hwm : NaN;
      m[`err${level}`] = r.errors + (level - r.requests);
      m[`wall${level}`] = r.wallMs;
      m[`ttfb${level}`] = quantile(r.samples.filter((s) => s.ok).map((s) => s.ttfb), 0.5);
      m[`ttlb${level}`] = quantile(r.samples.filter((s) => s.ok).map((s) => s.ttlb), 0.5);
      m[`firstError${level}`] = r.firstError;
      m[`inflight${level}`] = peakInFlight(r.samples);
      await ctx.driver.call({ cmd: "reset" });
    }
    // Per request the proxy holds (streaming, or queued when it caps its upstream requests: see inflight).
    m.perStream = Number.isFinite(m.hwm1000) ? ((m.hwm1000 - m.idle) * 1024) / 1000 : NaN;
    m.mirror = await mirrorStats(target);
    return m;
  } finally {
    await ctx.driver.call({ cmd: "reset" });
    await target.stop();
    children.delete(target.child);
  }
}

/** The most responses that were streaming at once (between their first and last byte). */
function peakInFlight(samples) {
  const edges = [];
  for (const s of samples) {
    if (!Number.isFinite(s.ttfb) || !Number.isFinite(s.ttlb)) continue;
    edges.push([s.at + s.ttfb, 1], [s.at + s.ttlb, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = 0;
  for (const [, d] of edges) peak = Math.max(peak, now += d);
  return peak;
}

/** Runs micro.mjs under Bun; resolves with its JSON (or an error). */
function micro(scratch) {
  const args = [join(ROOT, "scripts/bench/micro.mjs"), "--scratch", scratch, ...(Q ? ["--quick"] : [])];
  const r = spawnSync(join(ROOT, "node_modules/.bin/bun"), args, { cwd: ROOT, encoding: "utf8", timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
  if (!opts.quiet) process.stderr.write(r.stderr ?? "");
  try {
    return JSON.parse(r.stdout.trim().split("\n").at(-1));
  } catch {
    return { error: `micro.mjs failed (status ${r.status}): ${(r.stderr ?? "").slice(-300)}` };
  }
}

/** The Markdown of the mirror's in-process costs. */
function microTables(m) {
  if (m?.error) return `micro-benchmark failed: ${m.error}`;
  const v = (x, k) => (x && !x.error ? num(x[k]) : x?.error ? `error: ${x.error}` : "—");
  const lines = [
    "| per completed response (median) | request parse + hash | SSE parse | plan + write + fsync | total |",
    "|---|---|---|---|---|",
  ];
  for (
    const [label, key] of [
      ["short answer, 10-turn conversation, fsync on", "mirror_short_fsync"],
      ["short answer, fsync off", "mirror_short_nofsync"],
      ["2,000-event answer, fsync on", "mirror_long_fsync"],
      ["2,000-event answer, fsync off", "mirror_long_nofsync"],
    ]
  ) {
    const x = m[key];
    lines.push(`| ${label} (ms) | ${v(x, "prepareMs")} | ${v(x, "streamMs")} | ${v(x, "commitMs")} | ${v(x, "totalMs")} |`);
  }
  const h = m.mirror_history;
  if (h && !h.error) {
    lines.push(`| 200-turn history, session's first request: all 401 messages new (ms) | — | — | ${num(h.firstCommitMs)} | ${num(h.firstTotalMs)} |`);
    lines.push(`| 200-turn history, steady state: 2 new messages (ms) | ${num(h.steadyPrepareMs)} | — | ${num(h.steadyCommitMs)} | ${num(h.steadyTotalMs)} |`);
  }
  lines.push("", "| SSE parse alone (SseMessageReader) | per answer (ms) | per event (µs) |", "|---|---|---|");
  for (
    const [label, key] of [["2,000-event answer, one chunk per event", "sse_long_per_event"], ["2,000-event answer, 16 KiB chunks", "sse_long_16k"], [
      "64 KiB tool call, one chunk per event",
      "sse_tool_per_event",
    ]]
  ) {
    lines.push(`| ${label} | ${v(m[key], "ms")} | ${v(m[key], "usPerEvent")} |`);
  }
  lines.push(
    "",
    "| request side (one new message), in the engine | body | read, seen first: decode, parse, hash every message (ms) | read, its history known (ms) | identify: route, session, environment (ms) | planRequest (ms) | engine total (ms) | relay: one copy of the body (ms) | of which decode + JSON.parse (ms) |",
    "|---|---|---|---|---|---|---|---|---|",
  );
  for (
    const [label, key] of [["10-turn conversation", "request_conversation"], ["50-turn history", "request_history_50"], [
      "100-turn history",
      "request_history_100",
    ], ["200-turn history", "request_history_200"]]
  ) {
    const x = m[key];
    if (!x) continue;
    lines.push(
      `| ${label} | ${x.bytes ? `${(x.bytes / 1048576).toFixed(2)} MiB, ${x.messages} messages` : "—"} | ${v(x, "firstReadMs")} | ${v(x, "readMs")} | ${
        v(x, "identifyMs")
      } | ${v(x, "planMs")} | ${v(x, "totalMs")} | ${v(x, "relayMs")} | ${v(x, "parseMs")} |`,
    );
  }
  return lines.join("\n");
}

/** Replaces the generated section of the results file (creating the file when needed). */
function writeResults(path, section) {
  const begin = "<!-- bench:results:begin (written by npm run bench; edit outside these markers) -->";
  const end = "<!-- bench:results:end -->";
  const block = `${begin}\n${section}\n${end}`;
  let text = existsSync(path) ? readFileSync(path, "utf8") : `# Benchmarks\n\n${begin}\n${end}\n`;
  const a = text.indexOf("<!-- bench:results:begin");
  const b = text.indexOf(end);
  text = a >= 0 && b > a ? text.slice(0, a) + block + text.slice(b + end.length) : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(path, text);
}

async function main() {
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;
  if (process.platform !== "linux") throw new Error("the bench reads /proc: Linux only");
  if (opts.withNginx && !opts.noNginx && !installNginx(log)) log("nginx could not be installed: running without it");
  let names = TARGETS.map((t) => t.name);
  if (opts.targets) names = ["direct", ...opts.targets.filter((n) => n !== "direct")];
  for (const n of names) if (!TARGETS.some((t) => t.name === n)) throw new Error(`unknown target ${n}`);
  if (opts.noNginx || nginxBinary() === null) {
    if (names.includes("nginx") && opts.targets?.includes("nginx")) log("nginx is not installed: left out (use --with-nginx)");
    names = names.filter((n) => n !== "nginx");
  }
  const binary = join(ROOT, "dist/sessiontap");
  if (names.some((n) => n.startsWith("bun"))) {
    const stale = !existsSync(binary) || statSync(binary).mtimeMs < newest(join(ROOT, "src"));
    if (stale && opts.build) {
      log("building dist/sessiontap (node scripts/build.mjs)");
      const b = spawnSync(process.execPath, [join(ROOT, "scripts/build.mjs")], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"], timeout: 300_000 });
      if (b.status !== 0) throw new Error("the build failed");
    } else if (!existsSync(binary)) throw new Error("dist/sessiontap is missing (run without --no-build)");
  }
  const scratch = mkdtempSync(join(tmpdir(), "sessiontap-bench-"));
  log(`scratch ${scratch}; targets ${names.join(", ")}; ${PLAN.reps} repetition(s), ${PLAN.memReps} memory repetition(s)`);
  const info = machine();
  const stub = await startStub();
  const driver = await startDriver();
  const archive = join(scratch, "archive");
  if (names.some((n) => /^(bun|deno)-/.test(n))) {
    const bytes = writeArchive(archive, { sessions: PLAN.archiveSessions });
    log(`wrote a ${PLAN.archiveSessions}-session archive for the viewer's search (${(bytes / 1048576).toFixed(1)} MiB)`);
  }
  const ctx = { stub, driver, scratch, binary, archive };
  const reps = [];
  const raw = { plan: PLAN, info, reps: [], mem: {} };
  try {
    // Warm the stub and the driver (JIT, buffers) so that direct, run first, is not measured cold.
    log("warming the stub and the driver");
    for (let i = 0; i < 2; i++) {
      const direct = { name: "direct", port: stub.port, pids: () => [] };
      await scenario(ctx, direct, { answer: "short", body: "conversation", concurrency: 1, perSlot: 100, prefix: `warm${i}-short` });
      await scenario(ctx, direct, { answer: "long", body: "single", concurrency: 1, perSlot: 20, prefix: `warm${i}-long` });
      await scenario(ctx, direct, { answer: "long", body: "single", concurrency: 20, perSlot: 1, prefix: `warm${i}-long20` });
      await scenario(ctx, direct, { answer: "tool", body: "single", concurrency: 1, perSlot: 10, prefix: `warm${i}-tool` });
      await scenario(ctx, direct, { answer: "short", body: "history", concurrency: 1, perSlot: 2, prefix: `warm${i}-hist` });
    }
    await driver.call({ cmd: "reset" });
    // Throughput and latency, every target in each repetition (the order rotates between repetitions).
    for (let rep = 1; rep <= PLAN.reps; rep++) {
      if (rep > 1 && Date.now() - started > PLAN.deadlineMs * 0.55) {
        log(`time bound: stopping after ${rep - 1} repetition(s)`);
        break;
      }
      const figures = {};
      const order = names.slice((rep - 1) % names.length).concat(names.slice(0, (rep - 1) % names.length));
      const rawRep = {};
      for (const name of order) {
        const t0 = Date.now();
        const r = await throughputRep(ctx, name, rep);
        rawRep[name] = r;
        figures[name] = figuresOf(r);
        log(
          `rep ${rep} ${name}: TTFB p50 ${num(figures[name].ttfbP50)} ms, 2k-event TTLB ${num(figures[name].longTtlbP50)} ms, ${
            Math.round(figures[name].evps100)
          } ev/s at 100, history TTFB ${num(figures[name].histTtfbP50)} ms (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
        );
      }
      reps.push(figures);
      raw.reps.push(rawRep);
    }
    // Memory at 1, 100 and 1,000 concurrent streams: a fresh process per target and repetition.
    const mem = {};
    const failed1000 = new Set();
    for (let rep = 1; rep <= PLAN.memReps; rep++) {
      if (rep > 1 && Date.now() - started > PLAN.deadlineMs * 0.8) {
        log(`time bound: stopping memory runs after ${rep - 1} repetition(s)`);
        break;
      }
      // bare-bun shows what a relay with JavaScript per chunk costs per stream on Bun (the floor under
      // bun-on's memory); the Deno ones answer latency and throughput questions only.
      for (const name of names.filter((n) => !n.startsWith("bare-deno"))) {
        const t0 = Date.now();
        const m = await memoryRep(ctx, name, rep, failed1000.has(name));
        if ((m.err1000 ?? 0) > 0) failed1000.add(name);
        (mem[name] ??= []).push(m);
        log(
          `mem ${rep} ${name}: idle ${num(m.idle)} MiB, peak ${num(m.hwm1)} / ${num(m.hwm100)} / ${num(m.hwm1000)} MiB, errors ${m.err1} / ${m.err100} / ${
            m.err1000 ?? "skipped"
          }${m.firstError1000 ? ` (${m.firstError1000})` : ""} (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
        );
      }
    }
    raw.mem = mem;
    log("micro-benchmark of the mirror under Bun (scripts/bench/micro.mjs)");
    const microOut = micro(scratch);
    raw.micro = microOut;
    const wallS = (Date.now() - started) / 1000;

    const labels = Object.fromEntries(TARGETS.map((t) => [t.name, t.label]));
    const summary = summarize(reps, names);
    const targetRows = verdicts(reps, mem, microOut, names);
    const mirrorRows = names.filter((n) => n.endsWith("-on")).map((n) => {
      const s = raw.reps.map((r) => r[n]?.mirror).filter(Boolean);
      const sum = (k) => s.reduce((a, x) => a + (x[k] ?? 0), 0);
      return `${n}: ${sum("responses")} responses, ${sum("appends")} appends, ${sum("records")} records, ${sum("errors")} errors, ${sum("skipped")} skipped, ${
        sum("gaveUp")
      } given up`;
    });
    const aLong = answerSize("long");
    const aTool = answerSize("tool");
    const aShort = answerSize("short");
    const aPaced = answerSize("paced");
    const section = [
      `## Latest results`,
      ``,
      `- **Command:** \`${command}\` — wall time ${Math.floor(wallS / 60)} min ${Math.round(wallS % 60)} s, ${
        new Date().toISOString().replace(/\.\d+Z$/, "Z")
      }, commit ${info.commit}.`,
      `- **Machine:** ${info.nproc} cores (${info.cpu}), ${info.memGiB} GiB memory, ${info.os}, Linux ${info.kernel}. Touching fresh memory costs ${
        num(info.pageFault.usPerPage)
      } µs per 4 KiB page here (${num(info.pageFault.msPer64MiB)} ms per 64 MiB).`,
      `- **Runtimes:** Node ${info.node} (stub, driver), Bun ${info.bun} (compiled tap, micro-benchmark), ${info.deno}, nginx ${info.nginx}.`,
      `- **Repetitions:** ${reps.length} of the latency/throughput scenarios, ${
        Math.max(0, ...Object.values(mem).map((m) => m.length))
      } of the memory scenarios; each figure is the median, with min–max over repetitions in brackets.`,
      `- **Workload:** short answer ${aShort.events} events / ${aShort.bytes} B to a ~17–19 KiB conversation request (sessions of 10 turns); 2,000-event answer ${aLong.events} events / ${
        (aLong.bytes / 1024).toFixed(0)
      } KiB (~100 B text deltas), one HTTP chunk per event, sent as fast as the socket takes it (16 events per socket write); tool call ${aTool.events} events / ${
        (aTool.bytes / 1024).toFixed(0)
      } KiB carrying 64 KiB of input JSON; history request 4 MiB with 200 turns (401 messages), each measured request adding one exchange. Requests per repetition: ${PLAN.short} short, ${PLAN.long1} + ${
        100 * PLAN.long100PerSlot
      } 2,000-event, ${PLAN.tool} tool, ${PLAN.history} history. Memory and concurrency: a ${aPaced.events}-event answer (${
        (aPaced.bytes / 1024).toFixed(0)
      } KiB) at a fast model's pace, ${PLAN.pace.replace(",", " events every ")} ms (${
        (answerSize("paced").events / Number(PLAN.pace.split(",")[0]) * Number(PLAN.pace.split(",")[1]) / 1000).toFixed(1)
      } s a stream), to ${PLAN.memLevels.join(", ")} concurrent streams, each target on a fresh process.`,
      ``,
      `### Latency and throughput (ratio to direct in the same repetition · absolute median)`,
      ``,
      table(summary, names, labels),
      ``,
      `### Memory (MiB; direct has no process in the middle)`,
      ``,
      memTable(mem, names, labels),
      ``,
      `### The mirror's cost (in-process, Bun ${info.bun}, this machine's disk)`,
      ``,
      microTables(microOut),
      ``,
      `Mirror counters after the runs (from /_tap/health): ${mirrorRows.join("; ") || "—"}.`,
      ``,
      `### Targets (reported, never asserted)`,
      ``,
      `| who | target | measured | verdict |`,
      `|---|---|---|---|`,
      ...targetRows.map((r) => `| ${r.join(" | ")} |`),
    ].join("\n");
    process.stdout.write(`\n${section}\n`);
    const write = opts.write ?? !Q;
    if (write) {
      const out = isAbsolute(opts.out) ? opts.out : join(ROOT, opts.out);
      mkdirSync(join(out, ".."), { recursive: true });
      writeResults(out, section);
      log(`wrote ${opts.out}`);
    }
    if (opts.json) writeFileSync(opts.json, JSON.stringify(raw, null, 1));
    log(`done in ${wallS.toFixed(0)} s`);
  } finally {
    driver.child.send({ cmd: "exit" });
    await stopChild(driver.child, "SIGTERM", 2000);
    await stopChild(stub.child, "SIGTERM", 2000);
    if (!opts.keep) rmSync(scratch, { recursive: true, force: true });
    else log(`kept ${scratch}`);
  }
}

main().then(
  () => process.exit(0),
  async (error) => {
    console.error(`bench: ${error?.stack ?? error}`);
    await cleanupAndExit(1);
  },
);
