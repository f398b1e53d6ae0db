// In-process microbenchmark of the mirror engine's work, run under Bun (it imports the tap's TypeScript
// modules from src/): the SSE parse of each answer, the request side of a 4 MiB, 200-turn history in the
// steady state (src/mirror/response-follower.ts: the request reader, identity, then planRequest) and how that
// scales with history length, and the whole engine per completed response (read, fold, plan, write, fsync)
// with fsync on and off.
// Prints one JSON object on stdout. Every loop is bounded in count and in time. Any measurement whose
// module moved or changed shape is reported as an error string, not a crash.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { answerTail, conversationBody, HistoryBody, messageStart } from "./workload.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const scratchArg = args.indexOf("--scratch");
const scratch = mkdtempSync(join(scratchArg >= 0 ? args[scratchArg + 1] : process.env.TMPDIR ?? "/tmp", "micro-"));
const BUDGET_MS = quick ? 400 : 1500;
const enc = new TextEncoder();
const out = { runtime: `bun ${process.versions.bun ?? "?"}`, quick };

/** Runs `fn` repeatedly (warm-up first) for at most `budget` ms and `max` runs; the median ms per run (and of what `fn` timed itself). */
async function timeIt(fn, { budget = BUDGET_MS, max = 200, min = 3 } = {}) {
  await fn();
  const times = [];
  const own = [];
  const end = performance.now() + budget;
  while (times.length < max && (times.length < min || performance.now() < end)) {
    const t = performance.now();
    const r = await fn();
    times.push(performance.now() - t);
    if (typeof r === "number") own.push(r);
  }
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  return { ms: median(times), measured: own.length ? median(own) : undefined, runs: times.length };
}

/** Runs one named measurement, keeping an error message instead when it throws. */
async function measure(name, fn) {
  try {
    out[name] = await fn();
  } catch (error) {
    out[name] = { error: String(error?.message ?? error).split("\n")[0].slice(0, 200) };
  }
  process.stderr.write(`[micro] ${name}: ${JSON.stringify(out[name])}\n`);
}

/** An answer as the tap sees it: one chunk per event, or cut into `size`-byte chunks. */
function chunks(kind, size = 0) {
  const events = [messageStart(1), ...answerTail(kind)];
  if (size === 0) return events.map((e) => enc.encode(e));
  const all = enc.encode(events.join(""));
  const list = [];
  for (let i = 0; i < all.length; i += size) list.push(all.subarray(i, i + size));
  return list;
}

const { SseMessageReader } = await import("../../src/protocol/sse-accumulator.ts");
const lineage = await import("../../src/protocol/lineage.ts");

for (const [name, kind, size] of [["sse_long_per_event", "long", 0], ["sse_long_16k", "long", 16384], ["sse_tool_per_event", "tool", 0]]) {
  await measure(name, async () => {
    const list = chunks(kind, size);
    const events = [messageStart(1), ...answerTail(kind)].length;
    const { ms, runs } = await timeIt(() => {
      const reader = new SseMessageReader();
      for (const c of list) reader.feed(c);
      reader.end();
      if (!reader.acc.complete) throw new Error("answer did not complete");
    });
    return { ms, usPerEvent: (ms * 1000) / events, events, chunks: list.length, runs };
  });
}

const { readRequest } = await import("../../src/protocol/lineage.ts");
const { prepareRequest } = await import("../../src/mirror/response-follower.ts");
const IDENTITY = { session: "micro-history", agent: null, parentAgent: null, userAgent: "claude-cli/2.1.328 (external, cli)" };

/**
 * The request side of one body, as the engine runs it (src/mirror/response-follower.ts): the body read (seen first: decoded,
 * parsed, every message hashed; its history known: the prefix hashed, the rest parsed), identified, then planned against a
 * lineage that holds everything but the new message. Beside it, for reference, the decode + JSON.parse alone.
 */
async function requestSide(body) {
  const bytes = enc.encode(body);
  const parse = await timeIt(() => JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)));
  // Seen first: leading spaces make every body's bytes new to the reader, so none has a prefix it read before.
  let spaces = 0;
  const first = await timeIt(() => {
    const fresh = enc.encode(" ".repeat(++spaces) + body);
    const t = performance.now();
    readRequest(fresh);
    return performance.now() - t;
  });
  // Its history known (the engine's steady state): the same body again, its prefix read before.
  readRequest(bytes);
  const read = await timeIt(() => {
    const t = performance.now();
    readRequest(bytes);
    return performance.now() - t;
  });
  const prepare = await timeIt(() => {
    const t = performance.now();
    prepareRequest(IDENTITY, bytes, { version: "0", sideRequests: true });
    return performance.now() - t;
  });
  const { messages } = readRequest(bytes);
  // Steady state: everything but the new user message is already mirrored (its answer included).
  const index = new Map(messages.slice(0, -1).map((m, i) => [m.key, `uuid-${i}`]));
  const plan = await timeIt(() => lineage.planRequest(index, messages));
  const p = lineage.planRequest(index, messages);
  // What the relay does with the body instead: one copy into the buffer the engine takes over.
  const relay = await timeIt(() => {
    const copy = new Uint8Array(bytes.length);
    copy.set(bytes);
    return copy.length;
  });
  const readMs = read.measured;
  const prepareMs = prepare.measured;
  return {
    bytes: bytes.length,
    messages: messages.length,
    parseMs: parse.ms,
    readMs,
    firstReadMs: first.measured,
    identifyMs: Math.max(0, prepareMs - readMs),
    planMs: plan.ms,
    totalMs: prepareMs + plan.ms,
    relayMs: relay.ms,
    newMessages: messages.length - p.start,
  };
}

await measure("request_conversation", () => requestSide(conversationBody("micro-conv", 9)));
const histories = {};
for (const turns of quick ? [50, 200] : [50, 100, 200]) {
  histories[turns] = new HistoryBody("micro-history", turns, Math.round((4 * 1024 * 1024 * turns) / 200));
  await measure(`request_history_${turns}`, () => requestSide(histories[turns].body(2)));
}
out.request_steady_200 = out.request_history_200;

// The whole mirror per completed response, through the engine the tap runs in its Worker
// (src/mirror/engine.ts), driven here in this thread with the same messages the relay sends.
const { MirrorEngine } = await import("../../src/mirror/engine.ts");
const { nodeFs } = await import("../../src/storage/fs-adapter.ts");
const { parseConfig } = await import("../../src/config/parse.ts");
const { engineSettings } = await import("../../src/cli/start-tap.ts");

/** An engine on a fresh root under the scratch directory, configured like `serve` does (fsync as `sync`). */
async function newEngine(sync) {
  const root = join(scratch, `mirror-${sync ? "sync" : "nosync"}-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const config = parseConfig(["serve", "--mirror-dir", root, "--claude-dir", join(scratch, "claude")], {
    SESSIONTAP_RETENTION_DAYS: "0",
    SESSIONTAP_GUARD: "off",
  }, scratch);
  const engine = new MirrorEngine({ ...engineSettings(config, { spoolTmpDir: scratch }), sync }, {
    fs: nodeFs,
    clock: Date.now,
    post: () => {},
  });
  await engine.start();
  return engine;
}

let nextId = 1;
/** One request + response through the engine; resolves with the time of each step, in ms. */
async function oneResponse(engine, session, body, list) {
  const id = nextId++;
  const bytes = enc.encode(body); // the relay's bytes: encoding them is not the engine's work
  const t0 = performance.now();
  engine.receive({ t: "begin", id, at: Date.now(), identity: { ...IDENTITY, session } });
  engine.receive({ t: "body", id, copy: { bytes } });
  const t1 = performance.now();
  engine.receive({ t: "head", id, status: 200, requestId: "req_micro", framing: "sse" });
  for (const c of list) engine.receive({ t: "chunks", bytes: c, index: [id, c.length] });
  const t2 = performance.now();
  const appends = engine.mirror.stats.appends;
  engine.receive({ t: "end", id });
  // Bounded: a write that does not settle within 10 s is this measurement's error, not a hung run.
  await engine.mirror.flush(10_000);
  if (engine.mirror.stats.appends !== appends + 1) throw new Error(`the answer was not written (stats ${JSON.stringify(engine.mirror.stats)})`);
  const t3 = performance.now();
  return { prepareMs: t1 - t0, streamMs: t2 - t1, commitMs: t3 - t2, totalMs: t3 - t0 };
}

/** Median of each step over `n` responses (bounded by the time budget), sessions of 10 turns. */
async function perResponse(sync, kind, n) {
  const engine = await newEngine(sync);
  const list = chunks(kind);
  const rows = [];
  const end = performance.now() + BUDGET_MS * 4;
  for (let i = 0; i < n + 3 && performance.now() < end; i++) {
    const r = await oneResponse(engine, `micro-${kind}-${Math.floor(i / 10)}`, conversationBody("x", i % 10), list);
    if (i >= 3) rows.push(r); // the first few warm the JIT
  }
  await engine.stop(5000);
  const med = (k) => rows.map((r) => r[k]).sort((a, b) => a - b)[Math.floor(rows.length / 2)];
  const stats = { ...engine.mirror.stats };
  if (stats.errors > 0 || stats.appends === 0) throw new Error(`mirror did not write (stats ${JSON.stringify(stats)})`);
  return { prepareMs: med("prepareMs"), streamMs: med("streamMs"), commitMs: med("commitMs"), totalMs: med("totalMs"), responses: rows.length };
}

for (const sync of [true, false]) {
  await measure(`mirror_short_${sync ? "fsync" : "nofsync"}`, () => perResponse(sync, "short", quick ? 20 : 60));
  await measure(`mirror_long_${sync ? "fsync" : "nofsync"}`, () => perResponse(sync, "long", quick ? 8 : 20));
}

// The 200-turn history through the mirror: the session's first request (every message new) and then
// requests that each add one exchange (steady state).
await measure("mirror_history", async () => {
  const engine = await newEngine(true);
  const history = histories[200];
  const list = chunks("short");
  const first = await oneResponse(engine, "micro-history", history.body(0), list);
  const rows = [];
  const end = performance.now() + BUDGET_MS * 4;
  for (let k = 1; k <= (quick ? 4 : 10) && performance.now() < end; k++) rows.push(await oneResponse(engine, "micro-history", history.body(k), list));
  await engine.stop(5000);
  const mirror = engine.mirror;
  const med = (key) => rows.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(rows.length / 2)];
  return {
    firstTotalMs: first.totalMs,
    firstCommitMs: first.commitMs,
    steadyPrepareMs: med("prepareMs"),
    steadyCommitMs: med("commitMs"),
    steadyTotalMs: med("totalMs"),
    responses: rows.length,
    records: mirror.stats.records,
    errors: mirror.stats.errors,
  };
});

rmSync(scratch, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
