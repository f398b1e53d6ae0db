// The bench's stub upstream: a loopback Messages API that answers POST /v1/messages with a prebuilt SSE
// answer chosen by the `x-bench-answer` header (short | long | tool | paced), one HTTP chunk per event, as
// fast as the socket takes them. `x-bench-pace: K,D` sends K events, waits D ms, and so on (streams that stay in
// flight, for the concurrency and memory figures). Run as a child: prints `listening PORT` when ready.
import { createServer } from "node:http";
import process from "node:process";
import { ANSWER_KINDS, answerTail, messageStart } from "./workload.mjs";

const TAILS = Object.fromEntries(ANSWER_KINDS.map((k) => [k, answerTail(k).map((e) => Buffer.from(e))]));
/** Events per socket write in an unpaced answer. */
const WRITE_GROUP = 16;
let count = 0;
let served = 0;
let cut = 0;

/** Waits until the response's socket buffer drained (or the response is gone); false when it is gone. */
async function drained(res) {
  if (!res.destroyed && res.writableNeedDrain) {
    await new Promise((resolve) => {
      const done = () => (res.off("drain", done), res.off("close", done), resolve());
      res.on("drain", done);
      res.on("close", done);
    });
  }
  return !res.destroyed;
}

/** Sends one SSE answer. */
async function answer(req, res, n) {
  const kind = String(req.headers["x-bench-answer"] ?? "short");
  const tail = TAILS[kind];
  if (tail === undefined) {
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: `stub: unknown answer ${kind}` } }));
    return;
  }
  const pace = /^(\d+),(\d+)$/.exec(String(req.headers["x-bench-pace"] ?? ""));
  const perBurst = pace ? Math.max(1, Number(pace[1])) : Infinity;
  const delay = pace ? Number(pace[2]) : 0;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "request-id": `req_bench_${String(n).padStart(12, "0")}`,
  });
  res.flushHeaders();
  res.write(Buffer.from(messageStart(n)));
  // One HTTP chunk per event, as an SSE server sends them; the events of a burst (a paced burst, or
  // WRITE_GROUP events of an unpaced answer) go to the socket in one writev, so the stub's own cost per
  // event stays small and steady and the figures show the proxy's.
  const group = Math.min(perBurst, WRITE_GROUP);
  for (let i = 0; i < tail.length; i += group) {
    if (i > 0 && i % perBurst === 0) await new Promise((r) => setTimeout(r, delay));
    if (res.destroyed) return void cut++;
    res.cork();
    let room = true;
    for (const chunk of tail.slice(i, i + group)) room = res.write(chunk);
    res.uncork();
    if (!room && !(await drained(res))) return void cut++;
  }
  res.end();
  served++;
}

const server = createServer({ keepAliveTimeout: 120_000, requestTimeout: 0, headersTimeout: 60_000 }, (req, res) => {
  const n = ++count;
  let bytes = 0;
  req.on("data", (c) => (bytes += c.length));
  req.on("error", () => {});
  req.on("end", () => {
    const declared = Number(req.headers["content-length"] ?? bytes);
    if (declared !== bytes) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: `stub: body ${bytes} of ${declared} bytes` } }));
      return;
    }
    answer(req, res, n).catch(() => res.destroy());
  });
});
server.keepAliveTimeout = 120_000;
server.maxHeadersCount = 0;
server.on("clientError", (_e, socket) => socket.destroy());
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
process.on("message", (m) => {
  if (m === "stats") process.send?.({ count, served, cut });
});
process.on("SIGTERM", () => {
  server.closeAllConnections?.();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
});
