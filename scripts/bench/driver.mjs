// The bench's load driver: a child process (forked with IPC) that opens keep-alive HTTP/1.1 connections on
// raw sockets, sends Messages API requests, decodes the (chunked) response itself and times each one:
// time to first byte, time to last byte, body bytes and SSE events, checked against what the stub sent.
// Raw sockets rather than node:http keep the driver's own cost per chunk small and its timings close to the
// wire. Every run is bounded in requests and in time.
import { createHash } from "node:crypto";
import { connect } from "node:net";
import process from "node:process";
import { ANSWER_KINDS, answerSize, answerTail, conversationBody, HistoryBody, messageStart } from "./workload.mjs";

const NN = Buffer.from("\n\n");
const SIZES = Object.fromEntries(ANSWER_KINDS.map((k) => [k, answerSize(k)]));
/** Bytes of message_start (fixed width): the part of a body that differs between responses. */
const START_BYTES = Buffer.byteLength(messageStart(0));
/** sha1 of each answer after message_start: what every byte the client receives must match. */
const TAIL_SHA1 = Object.fromEntries(ANSWER_KINDS.map((k) => [k, createHash("sha1").update(answerTail(k).join("")).digest("hex")]));
let history = null;

/** One keep-alive connection and the response being read on it. */
class Conn {
  constructor(port) {
    this.port = port;
    this.sock = null;
    this.job = null;
  }

  /** Opens the socket (once; again after the server closed it). */
  open() {
    if (this.sock !== null && !this.sock.destroyed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const sock = connect({ host: "127.0.0.1", port: this.port, noDelay: true });
      const fail = (e) => reject(e);
      sock.once("error", fail);
      sock.once("connect", () => {
        sock.off("error", fail);
        this.sock = sock;
        sock.on("data", (buf) => this.data(buf));
        sock.on("error", (e) => this.fail(`socket error: ${e.code ?? e.message}`));
        sock.on("close", () => {
          if (this.sock === sock) this.sock = null;
          this.fail("connection closed mid-response");
        });
        resolve();
      });
    });
  }

  /** Sends one request (bytes ready to write) and resolves with its timings; never rejects. */
  async request(bytes, { hash = false, timeoutMs = 60_000, eventTimes = false } = {}) {
    try {
      await this.open();
    } catch (e) {
      return { ok: false, err: `connect: ${e.code ?? e.message}` };
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.fail(`timeout after ${timeoutMs} ms`);
        this.sock?.destroy();
      }, timeoutMs);
      this.job = {
        resolve: (r) => (clearTimeout(timer), resolve(r)),
        t0: 0,
        t1: 0,
        phase: "head",
        head: [],
        headBytes: 0,
        status: 0,
        chunked: false,
        remaining: -1,
        close: false,
        state: "size",
        line: "",
        skip: 0,
        bytes: 0,
        events: 0,
        reads: 0,
        prevLF: false,
        hash: hash ? createHash("sha1") : null,
        times: eventTimes ? [] : null,
      };
      this.job.t0 = performance.now();
      this.sock.write(bytes);
    });
  }

  /** Ends the current response with an error. */
  fail(err) {
    const job = this.job;
    if (job === null) return;
    this.job = null;
    // A stream cut short still counts as in flight from its first byte to now.
    const ttfb = job.t1 > 0 ? job.t1 - job.t0 : undefined;
    job.resolve({
      ok: false,
      err,
      status: job.status,
      bytes: job.bytes,
      events: job.events,
      t0: job.t0,
      ttfb,
      ttlb: ttfb === undefined ? undefined : performance.now() - job.t0,
    });
  }

  /** Ends the current response successfully. */
  done() {
    const job = this.job;
    this.job = null;
    const t2 = performance.now();
    job.resolve({
      ok: job.status === 200,
      err: job.status === 200 ? undefined : `status ${job.status}`,
      status: job.status,
      t0: job.t0,
      ttfb: job.t1 - job.t0,
      ttlb: t2 - job.t0,
      bytes: job.bytes,
      events: job.events,
      reads: job.reads,
      sha1: job.hash?.digest("hex"),
      times: job.times,
    });
    if (job.close) this.sock?.destroy();
  }

  /** Bytes from the socket. */
  data(buf) {
    const job = this.job;
    if (job === null) return; // nothing expected (a late byte after a failure): ignore
    if (job.t1 === 0) job.t1 = performance.now();
    job.reads++;
    let off = 0;
    if (job.phase === "head") {
      job.head.push(buf);
      job.headBytes += buf.length;
      const all = job.head.length === 1 ? buf : Buffer.concat(job.head);
      const end = all.indexOf("\r\n\r\n");
      if (end < 0) {
        if (job.headBytes > 65536) this.fail("response head too large");
        return;
      }
      const lines = all.toString("latin1", 0, end).split("\r\n");
      job.status = Number(lines[0].split(" ")[1]);
      for (const line of lines.slice(1)) {
        const c = line.indexOf(":");
        const name = line.slice(0, c).trim().toLowerCase();
        const value = line.slice(c + 1).trim().toLowerCase();
        if (name === "transfer-encoding" && value.includes("chunked")) job.chunked = true;
        else if (name === "content-length") job.remaining = Number(value);
        else if (name === "connection" && value.includes("close")) job.close = true;
      }
      job.phase = "body";
      buf = all;
      off = end + 4;
      if (!job.chunked && job.remaining === 0) return this.done();
    }
    if (job.chunked) this.chunked(buf, off);
    else {
      const n = job.remaining < 0 ? buf.length - off : Math.min(job.remaining, buf.length - off);
      this.body(buf, off, off + n);
      if (job.remaining >= 0) {
        job.remaining -= n;
        if (job.remaining === 0) this.done();
      }
    }
  }

  /** Decodes chunked transfer coding. */
  chunked(buf, off) {
    const job = this.job;
    while (off < buf.length && this.job === job) {
      if (job.state === "size") {
        const nl = buf.indexOf(0x0a, off);
        if (nl < 0) {
          job.line += buf.toString("latin1", off);
          return;
        }
        job.line += buf.toString("latin1", off, nl);
        off = nl + 1;
        const size = parseInt(job.line, 16);
        job.line = "";
        if (Number.isNaN(size)) return this.fail("bad chunk size");
        if (size === 0) job.state = "trailer";
        else {
          job.remaining = size;
          job.state = "data";
        }
      } else if (job.state === "data") {
        const n = Math.min(job.remaining, buf.length - off);
        this.body(buf, off, off + n);
        off += n;
        job.remaining -= n;
        if (job.remaining === 0) {
          job.state = "crlf";
          job.skip = 2;
        }
      } else if (job.state === "crlf") {
        const n = Math.min(job.skip, buf.length - off);
        off += n;
        job.skip -= n;
        if (job.skip === 0) job.state = "size";
      } else {
        const nl = buf.indexOf(0x0a, off);
        if (nl < 0) {
          job.line += buf.toString("latin1", off);
          return;
        }
        const line = (job.line + buf.toString("latin1", off, nl)).replace(/\r$/, "");
        job.line = "";
        off = nl + 1;
        if (line === "") return this.done();
      }
    }
  }

  /** Decoded body bytes: counts bytes and SSE events (blank-line terminated). */
  body(buf, start, end) {
    if (end <= start) return;
    const job = this.job;
    const slice = buf.subarray(start, end);
    if (job.hash !== null && job.bytes + slice.length > START_BYTES) job.hash.update(slice.subarray(Math.max(0, START_BYTES - job.bytes)));
    job.bytes += slice.length;
    const before = job.events;
    if (job.prevLF && slice[0] === 0x0a) job.events++;
    for (let i = slice.indexOf(NN); i >= 0; i = slice.indexOf(NN, i + 2)) job.events++;
    job.prevLF = slice[slice.length - 1] === 0x0a;
    if (job.times !== null && job.events > before) job.times.push(performance.now());
  }

  /** Closes the socket. */
  close() {
    this.job = null;
    this.sock?.destroy();
    this.sock = null;
  }
}

let pool = [];

/** The connections for `port`, at least `n` of them, all open. */
async function connections(port, n) {
  if (pool.length > 0 && pool[0].port !== port) reset();
  while (pool.length < n) pool.push(new Conn(port));
  const opening = pool.slice(0, n).map((c) => c.open().then(() => null, (e) => e));
  const errors = (await Promise.all(opening)).filter((e) => e !== null);
  if (errors.length > 0) throw new Error(`${errors.length} of ${n} connections failed to open (${errors[0].code ?? errors[0].message})`);
  return pool.slice(0, n);
}

/** Closes every connection. */
function reset() {
  for (const c of pool) c.close();
  pool = [];
}

/** The request bytes for slot `slot`'s `k`-th request of a run. */
function requestBytes(spec, port, slot, k) {
  let session;
  let body;
  if (spec.body === "conversation") {
    // Sessions of `turns` turns: a realistic mix of first requests and appends to a growing conversation.
    const turns = spec.turns ?? 10;
    const seq = (spec.offset ?? 0) + k;
    session = `${spec.prefix}-s${slot}-c${Math.floor(seq / turns)}`;
    body = conversationBody(session, seq % turns);
  } else if (spec.body === "single") {
    // One new prompt per request, in the slot's session (the answer may be long: it is not sent back).
    session = `${spec.prefix}-s${slot}`;
    body = conversationBody(session, 0, `Write the long report, part ${(spec.offset ?? 0) + k}`);
  } else if (spec.body === "history") {
    history ??= new HistoryBody("bench-history");
    session = spec.prefix;
    body = history.body((spec.offset ?? 0) + k);
  } else throw new Error(`unknown body ${spec.body}`);
  const bodyBuf = Buffer.from(body);
  const head = `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\n` +
    `content-length: ${bodyBuf.length}\r\nanthropic-version: 2023-06-01\r\nx-api-key: sk-bench-not-a-key\r\n` +
    `user-agent: sessiontap-bench\r\naccept: text/event-stream\r\nx-claude-code-session-id: ${session}\r\n` +
    `x-bench-answer: ${spec.answer}\r\n` + (spec.pace ? `x-bench-pace: ${spec.pace}\r\n` : "") + "\r\n";
  return Buffer.concat([Buffer.from(head, "latin1"), bodyBuf]);
}

/**
 * Runs one load: `concurrency` slots, each sending `perSlot` requests one after another, all bounded by
 * `budgetMs` (no new request starts after it). Returns every sample and the wall time.
 */
async function run(spec) {
  const conns = await connections(spec.port, spec.concurrency);
  const expected = SIZES[spec.answer];
  const samples = [];
  const deadline = performance.now() + (spec.budgetMs ?? 60_000);
  // Bodies are built before the clock starts, except for the history body (one at a time, 4 MiB each).
  const prebuilt = spec.body === "history"
    ? null
    : conns.map((_, slot) => Array.from({ length: spec.perSlot }, (_, k) => requestBytes(spec, spec.port, slot, k)));
  const started = performance.now();
  await Promise.all(
    conns.map(async (conn, slot) => {
      for (let k = 0; k < spec.perSlot && performance.now() < deadline; k++) {
        const bytes = prebuilt === null ? requestBytes(spec, spec.port, slot, k) : prebuilt[slot][k];
        const r = await conn.request(bytes, { hash: spec.hash === true, timeoutMs: spec.timeoutMs ?? 60_000 });
        if (r.ok && (r.bytes !== expected.bytes || r.events !== expected.events)) {
          r.ok = false;
          r.err = `body ${r.bytes} B / ${r.events} events, expected ${expected.bytes} B / ${expected.events}`;
        } else if (r.ok && spec.hash === true && r.sha1 !== TAIL_SHA1[spec.answer]) {
          r.ok = false;
          r.err = "body bytes differ from what the stub sent";
        }
        samples.push({ slot, k, ...r, at: (r.t0 ?? started) - started });
      }
    }),
  );
  const wallMs = performance.now() - started;
  const bad = samples.filter((s) => !s.ok);
  return {
    wallMs,
    samples: samples.map(({ ok, at, ttfb, ttlb, bytes, events, reads }) => ({ ok, at, ttfb, ttlb, bytes, events, reads })),
    errors: bad.length,
    firstError: bad[0]?.err ?? null,
    requests: samples.length,
    totalBytes: samples.reduce((n, s) => n + (s.bytes ?? 0), 0),
    totalEvents: samples.reduce((n, s) => n + (s.events ?? 0), 0),
  };
}

/**
 * What a concurrent stream feels: one paced stream whose event arrival times are kept, alone or while
 * another connection sends long-history requests one after another (at most `spec.history`, until the
 * stream ends), or (`spec.search`, a path) the viewer's search requests one after another. Returns the
 * largest gap between two arrivals and the other requests' timings.
 */
async function gap(spec) {
  const [stream, other] = await connections(spec.port, 2);
  const paced = requestBytes({ answer: "paced", body: "single", pace: spec.pace, prefix: `${spec.prefix}-paced` }, spec.port, 0, 0);
  // Built before the stream starts: building a 4 MiB body here would stall this process's own reading.
  const bodies = spec.search
    ? Array.from({ length: spec.history }, () => Buffer.from(`GET ${spec.search} HTTP/1.1\r\nhost: 127.0.0.1:${spec.port}\r\n\r\n`, "latin1"))
    : spec.withHistory
    ? Array.from(
      { length: spec.history },
      (_, k) => requestBytes({ answer: "short", body: "history", offset: (spec.offset ?? 0) + k, prefix: spec.prefix }, spec.port, 0, k),
    )
    : [];
  let streaming = true;
  const watched = stream.request(paced, { eventTimes: true, timeoutMs: spec.timeoutMs ?? 60_000 }).finally(() => (streaming = false));
  const history = [];
  if (bodies.length > 0) {
    for (let k = 0; k < bodies.length && streaming; k++) {
      const r = await other.request(bodies[k], { timeoutMs: spec.timeoutMs ?? 60_000 });
      history.push({ ok: r.ok, ttfb: r.ttfb, ttlb: r.ttlb, err: r.err });
    }
  }
  const r = await watched;
  const times = r.times ?? [];
  let maxGap = 0;
  for (let i = 1; i < times.length; i++) maxGap = Math.max(maxGap, times[i] - times[i - 1]);
  return {
    ok: r.ok,
    err: r.err ?? null,
    events: r.events,
    maxGap,
    history: history.length,
    historyErrors: history.filter((h) => !h.ok).length,
    historyTtlb: history.map((h) => h.ttlb),
    firstHistoryError: history.find((h) => !h.ok)?.err ?? null,
  };
}

process.on("message", async (msg) => {
  try {
    if (msg.cmd === "run") process.send({ id: msg.id, result: await run(msg.spec) });
    else if (msg.cmd === "gap") process.send({ id: msg.id, result: await gap(msg.spec) });
    else if (msg.cmd === "reset") {
      reset();
      process.send({ id: msg.id, result: null });
    } else if (msg.cmd === "exit") {
      reset();
      process.exit(0);
    }
  } catch (error) {
    process.send({ id: msg.id, error: String(error?.stack ?? error) });
  }
});
process.send({ ready: true });
