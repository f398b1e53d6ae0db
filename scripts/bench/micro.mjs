// In-process microbenchmark of the mirror's work, run under Bun (it imports the tap's TypeScript modules
// from src/): the SSE parse of each answer, the request-side parse and hashing of the 4 MiB, 200-turn
// history (src/protocol/lineage.ts hashMessages + planRequest) and how that scales with history length,
// and the whole mirror per completed response (parse, hash, plan, write, fsync) with fsync on and off.
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

const { SseMessageReader } = await import("../../src/protocol/sse-reader.ts");
const lineage = await import("../../src/protocol/lineage.ts");
const HashCache = await import("../../src/protocol/hash-cache.ts").then((m) => m.HashCache ?? null, () => null);

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

/** Times the request side of one body: decode + JSON.parse, hashMessages, planRequest against a warm index. */
async function requestSide(body) {
  const bytes = enc.encode(body);
  const parse = await timeIt(() => JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)));
  const messages = JSON.parse(body).messages;
  // The tap keeps a cache of message hashes across requests (src/protocol/hash-cache.ts) when there is
  // one: steady state is "everything but the new message was hashed by an earlier request".
  const cold = await timeIt(() => lineage.hashMessages(messages));
  let hash = cold;
  if (HashCache !== null) {
    hash = await timeIt(() => {
      const cache = new HashCache();
      lineage.hashMessages(messages.slice(0, -1), cache);
      const t = performance.now();
      lineage.hashMessages(messages, cache);
      return performance.now() - t;
    });
    hash = { ms: hash.measured };
  }
  const hashed = lineage.hashMessages(messages);
  // Steady state: everything but the new user message is already mirrored (its answer included).
  const index = new Map(hashed.slice(0, -1).map((m, i) => [m.key, `uuid-${i}`]));
  const plan = await timeIt(() => lineage.planRequest(index, hashed));
  const p = lineage.planRequest(index, hashed);
  return {
    bytes: bytes.length, messages: messages.length, parseMs: parse.ms, hashMs: hash.ms, hashColdMs: cold.ms, cached: HashCache !== null, planMs: plan.ms,
    totalMs: parse.ms + hash.ms + plan.ms, newMessages: hashed.length - p.start,
  };
}

await measure("request_conversation", () => requestSide(conversationBody("micro-conv", 9)));
const histories = {};
for (const turns of quick ? [50, 200] : [50, 100, 200]) {
  histories[turns] = new HistoryBody("micro-history", turns, Math.round((4 * 1024 * 1024 * turns) / 200));
  await measure(`request_history_${turns}`, () => requestSide(histories[turns].body(1)));
}

// The whole mirror per completed response, through the same objects the tap uses (src/tap/mirror.ts).
const { Mirror } = await import("../../src/tap/mirror.ts");
const { nodeFs } = await import("../../src/storage/fs-adapter.ts");
const { VERSION } = await import("../../src/version.ts");

/** A Mirror on a fresh root under the scratch directory, configured like `serve` does. */
function newMirror(sync) {
  const root = join(scratch, `mirror-${sync ? "sync" : "nosync"}-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  return new Mirror({
    fs: nodeFs, root, maxBytes: 100 * 1024 * 1024, retentionDays: 0, maxSessions: 1024, includeThinking: true,
    sideRequests: true, version: VERSION, clock: Date.now, stderr: () => {}, sync,
  });
}

/** One request + response through the mirror; resolves with the time of each step, in ms. */
async function oneResponse(mirror, session, body, list) {
  const headers = new Headers({ "content-type": "application/json", "x-claude-code-session-id": session, "user-agent": "claude-cli/2.1.328 (external, cli)" });
  const t0 = performance.now();
  const observer = mirror.begin({ method: "POST", pathname: "/v1/messages", headers, body: enc.encode(body) });
  observer.prepare();
  const t1 = performance.now();
  observer.response(200, new Headers({ "content-type": "text/event-stream", "request-id": "req_micro" }));
  let write;
  for (const c of list) write = observer.feed(c) ?? write;
  const t2 = performance.now();
  write = observer.end() ?? write;
  await write;
  const t3 = performance.now();
  return { prepareMs: t1 - t0, streamMs: t2 - t1, commitMs: t3 - t2, totalMs: t3 - t0 };
}

/** Median of each step over `n` responses (bounded by the time budget), sessions of 10 turns. */
async function perResponse(sync, kind, n) {
  const mirror = newMirror(sync);
  const list = chunks(kind);
  const rows = [];
  const end = performance.now() + BUDGET_MS * 4;
  for (let i = 0; i < n + 3 && performance.now() < end; i++) {
    const r = await oneResponse(mirror, `micro-${kind}-${Math.floor(i / 10)}`, conversationBody("x", i % 10), list);
    if (i >= 3) rows.push(r); // the first few warm the JIT
  }
  await mirror.flush(5000);
  const med = (k) => rows.map((r) => r[k]).sort((a, b) => a - b)[Math.floor(rows.length / 2)];
  const stats = { ...mirror.stats };
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
  const mirror = newMirror(true);
  const history = histories[200];
  const list = chunks("short");
  const first = await oneResponse(mirror, "micro-history", history.body(0), list);
  const rows = [];
  const end = performance.now() + BUDGET_MS * 4;
  for (let k = 1; k <= (quick ? 4 : 10) && performance.now() < end; k++) rows.push(await oneResponse(mirror, "micro-history", history.body(k), list));
  await mirror.flush(5000);
  const med = (key) => rows.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(rows.length / 2)];
  return {
    firstTotalMs: first.totalMs, firstCommitMs: first.commitMs,
    steadyPrepareMs: med("prepareMs"), steadyCommitMs: med("commitMs"), steadyTotalMs: med("totalMs"), responses: rows.length,
    records: mirror.stats.records, errors: mirror.stats.errors,
  };
});

rmSync(scratch, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
