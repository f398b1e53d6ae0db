// The tee and the relay's side of the mirror (src/tap/tee.ts, engine-link.ts) against a
// real mirror engine in its Worker writing real files (over a filesystem a test can make hang: faulty-fs.ts): the
// client's bytes are never changed and never wait for the engine — checked with the answer re-split at
// every byte boundary —, an answer is written once, as soon as it is whole, every way a stream can end
// reaches the engine once, and an engine that falls far behind costs the relay nothing but that answer.
import { after, afterEach, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { parseConfig } from "../../src/config/parse.ts";
import { engineSettings } from "../../src/cli/start-tap.ts";
import { type EngineHost, EngineLink, MAX_UNREAD, startWorkerEngine } from "../../src/tap/engine-link.ts";
import { MirrorEngine } from "../../src/mirror/engine.ts";
import type { EngineSeams, EngineSettings, FromEngine, ToEngine } from "../../src/mirror/messages.ts";
import { teeBody, type TeeOptions } from "../../src/tap/tee.ts";
import { callByName } from "../../src/utils/worker-call.ts";
import { faultyEngineFs } from "../support/faulty-fs.ts";
import { pollAsync, within } from "../support/poll.ts";
import { messageJson, sseEvent, textReply } from "../support/sse-build.ts";
import { loadFixture } from "../support/stub-upstream.ts";
import { allRecords, readEvents } from "../support/tap.ts";

const enc = new TextEncoder();
const SSE_HEADERS = new Headers({ "content-type": "text/event-stream", "request-id": "req_tee" });

/** A pull source over `chunks` that records how often it was pulled and why it was cancelled. */
function source(chunks: Uint8Array[], failAt = -1) {
  const state = { pulls: 0, cancelled: undefined as unknown, wasCancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const i = state.pulls++;
      if (i === failAt) controller.error(new Error("upstream reset"));
      else if (i < chunks.length) controller.enqueue(chunks[i].slice());
      else controller.close();
    },
    cancel(reason) {
      state.wasCancelled = true;
      state.cancelled = reason;
    },
  }, { highWaterMark: 0 });
  return { stream, state };
}

/** Reads a stream to its end (bounded). */
async function readAll(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const reader = stream.getReader();
  const out: Uint8Array[] = [];
  for (let i = 0; i < 100_000; i++) {
    const r = await within(reader.read(), 5000, `read ${i}`);
    if (r.done) return Buffer.concat(out);
    out.push(r.value);
  }
  throw new Error("stream did not end");
}

/** A request body for session `session` with one user prompt. */
function request(prompt: string): Uint8Array {
  return enc.encode(JSON.stringify({ model: "m", max_tokens: 10, stream: true, messages: [{ role: "user", content: prompt }] }));
}

/** Each part as the bytes of one chunk. */
const encoded = (parts: string[]) => parts.map((s) => enc.encode(s));
/** An assistant record of the mirror. */
const isAssistant = (r: { type?: unknown }) => r.type === "assistant";

/** An engine's settings as serve makes them, for a mirror root under `dir`: no retention sweep, no guard. */
function settingsFor(dir: string, env: Record<string, string> = {}): EngineSettings {
  const config = parseConfig(["serve", "--mirror-dir", `${dir}/mirror`, "--claude-dir", `${dir}/claude`], {
    SESSIONTAP_RETENTION_DAYS: "0",
    SESSIONTAP_GUARD: "off",
    ...env,
  }, dir);
  return engineSettings(config, { spoolTmpDir: dir });
}

/** A real engine in its Worker over a scratch mirror root (its filesystem and clock a test's own, when given). */
async function engineOn(seams?: EngineSeams) {
  const dir = mkdtempSync(`${tmpdir()}/sessiontap-tee-`);
  const root = `${dir}/mirror`;
  mkdirSync(root, { mode: 0o700 });
  const settings = settingsFor(dir);
  const stderr: string[] = [];
  const worker = new URL("../../src/mirror-worker.ts", import.meta.url);
  const { link } = await startWorkerEngine(worker, settings, { stderr: (l) => stderr.push(l), alerts: () => {} }, seams);
  return {
    link,
    dir,
    root,
    stderr,
    async close() {
      await link.stop(2000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A real engine in this thread whose messages wait until the test lets them through: what the relay does while the
 * engine has read nothing at all is then the relay's alone.
 */
async function heldEngine(env: Record<string, string> = {}) {
  const dir = mkdtempSync(`${tmpdir()}/sessiontap-held-`);
  mkdirSync(`${dir}/mirror`, { mode: 0o700 });
  const queue: ToEngine[] = [];
  let held = true;
  const said: string[] = [];
  const deliver = () => {
    while (!held && queue.length > 0) engine.receive(queue.shift()!);
  };
  const link = new EngineLink({ stderr: (l) => said.push(l), alerts: () => {} }, () => ({
    post: (m) => (queue.push(m as ToEngine), deliver()),
    call: ((name: string, ...args: unknown[]) => Promise.resolve().then(() => callByName(engine, name, args))) as EngineHost["call"],
    close: () => {},
  }), false);
  const engine = new MirrorEngine(settingsFor(dir, env), { fs: nodeFs, clock: Date.now, post: (m: FromEngine) => queueMicrotask(() => link.receive(m)) });
  await link.started;
  return {
    link,
    dir,
    root: `${dir}/mirror`,
    said,
    queue,
    release() {
      held = false;
      deliver();
    },
    async close() {
      this.release();
      await engine.stop(1000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Opens a followed request on `link` for `session`, its body sent and its 2xx head seen. */
function follow(link: EngineLink, session: string, headers = SSE_HEADERS, body = request(`prompt of ${session}`)) {
  const observer = link.openFor(new Headers({ "x-claude-code-session-id": session, "user-agent": "claude-cli/test" }), Date.now())!;
  observer.body({ bytes: body });
  assert.equal(observer.head(200, headers), true);
  return observer;
}

describe("tee and relay observer, with a real engine", () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  const options = (extra: Partial<TeeOptions> = {}): TeeOptions => ({ clientGone: () => false, ...extra });
  /** One macrotask turn, so a rejection nobody handled would have been reported by now. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

  before(() => void process.on("unhandledRejection", onUnhandled));
  afterEach(async () => {
    await settle();
    assert.deepEqual(unhandled, [], "an unhandled rejection escaped the tee");
  });
  after(() => void process.off("unhandledRejection", onUnhandled));

  it("re-split at every byte boundary: the client's bytes unchanged, one record", async () => {
    const text = loadFixture("ts_basic_response");
    const bytes = enc.encode(text);
    const e = await engineOn();
    try {
      const step = bytes.length > 3000 ? 3 : 1;
      for (let cut = 1; cut < bytes.length; cut += step) {
        const session = `cut-${cut}`;
        const observer = follow(e.link, session);
        const client = await readAll(teeBody(source([bytes.subarray(0, cut), bytes.subarray(cut)]).stream, observer, options()));
        assert.ok(client.equals(bytes), `cut ${cut}: the client's bytes changed`);
        await e.link.query("mirror.flush", 2000);
        assert.equal(allRecords(`${e.root}/${session}`).filter(isAssistant).length, 1, `cut ${cut}`);
      }
      // And every byte its own chunk.
      const observer = follow(e.link, "bytewise");
      const chunks = [...bytes].map((b) => Uint8Array.of(b));
      assert.ok((await readAll(teeBody(source(chunks).stream, observer, options()))).equals(bytes));
      await e.link.query("mirror.flush", 2000);
      assert.equal(allRecords(`${e.root}/bytewise`).filter(isAssistant).length, 1);
      assert.equal((await e.link.query("stats")).errors, 0);
    } finally {
      await e.close();
    }
  });

  it("an answer is written as soon as it is whole: once message_delta carried its stop_reason, before the stream ends", async () => {
    const e = await engineOn();
    try {
      const events = textReply("whole before the end", { id: "msg_early" });
      const stop = events.findIndex((x) => x.includes('"message_stop"'));
      const { stream } = source(encoded(events));
      const reader = teeBody(stream, follow(e.link, "early"), options()).getReader();
      for (let i = 0; i < stop; i++) await within(reader.read(), 5000, `event ${i}`);
      await e.link.query("mirror.flush", 2000);
      const answers = allRecords(`${e.root}/early`).filter(isAssistant) as { message: { stop_reason: string; content: { text: string }[] } }[];
      assert.equal(answers.length, 1, "written with message_stop still to come");
      assert.equal(answers[0].message.stop_reason, "end_turn");
      assert.equal(answers[0].message.content[0].text, "whole before the end");
      for (let r = await reader.read(); !r.done; r = await reader.read());
      await e.link.query("mirror.flush", 2000);
      assert.equal(allRecords(`${e.root}/early`).filter(isAssistant).length, 1, "and not again at the end");
    } finally {
      await e.close();
    }
  });

  it("a write that never finishes holds no byte: the client gets the whole answer at once, health says so after 2 s, and the record is written once the disk is back", async () => {
    const faults = faultyEngineFs();
    const e = await engineOn(faults.seams);
    try {
      await faults.set("hang");
      const chunks = encoded(textReply("not held back", { id: "msg_hang" }));
      const client = await readAll(teeBody(source(chunks).stream, follow(e.link, "hang"), options()));
      assert.ok(client.equals(Buffer.concat(chunks)));
      await pollAsync(() => faults.hung(), (n) => n > 0, 5000, "the write to start");
      assert.equal(allRecords(`${e.root}/hang`).filter(isAssistant).length, 0, "the write still hangs");
      assert.deepEqual((await e.link.health())!.problems, [], "a write in flight is no problem");
      await faults.skew(2000);
      const stalled = (await e.link.health())!.problems;
      assert.equal(stalled.length, 1, stalled.join("; "));
      assert.match(stalled[0], /^mirror: 1 commit waiting to be written \(a write has not finished for 2\.\d s\)$/);
      await faults.heal();
      await e.link.query("mirror.flush", 2000);
      assert.equal(allRecords(`${e.root}/hang`).filter(isAssistant).length, 1, "written once the disk came back");
    } finally {
      await e.close();
    }
  });

  it('an answer whose text mentions "message_stop" flows to its end while its write hangs, and is mirrored whole', async () => {
    const faults = faultyEngineFs();
    const e = await engineOn(faults.seams);
    try {
      await faults.set("hang");
      const chunks = encoded(textReply("the event is called message_stop, and this text mentions it", { id: "msg_false" }));
      const client = await readAll(teeBody(source(chunks).stream, follow(e.link, "false-candidate"), options()));
      assert.ok(client.equals(Buffer.concat(chunks)));
      await pollAsync(() => faults.hung(), (n) => n > 0, 5000, "the write to start");
      assert.equal(allRecords(`${e.root}/false-candidate`).filter(isAssistant).length, 0, "the stream ended with its write still hanging");
      await faults.heal();
      await e.link.query("mirror.flush", 2000);
      const answer = allRecords(`${e.root}/false-candidate`).find(isAssistant) as { message: { content: { text: string }[] } };
      assert.match(answer.message.content[0].text, /called message_stop/);
    } finally {
      await e.close();
    }
  });

  it("a non-streaming answer flows whole while its write hangs, and is written once the disk is back", async () => {
    const faults = faultyEngineFs();
    const e = await engineOn(faults.seams);
    try {
      const json = JSON.stringify(messageJson("msg_json", "m", [{ type: "text", text: "whole" }], "end_turn"));
      const chunks = encoded([json.slice(0, 10), json.slice(10, 30), json.slice(30)]);
      await faults.set("hang");
      const observer = follow(e.link, "json", new Headers({ "content-type": "application/json" }));
      assert.equal((await readAll(teeBody(source(chunks).stream, observer, options()))).toString(), json);
      await pollAsync(() => faults.hung(), (n) => n > 0, 5000, "the write to start");
      await faults.heal();
      await e.link.query("mirror.flush", 2000);
      const answer = allRecords(`${e.root}/json`).find(isAssistant) as { message: { id: string } };
      assert.equal(answer.message.id, "msg_json");
    } finally {
      await e.close();
    }
  });

  it("the tee reads no further ahead of the client than one chunk", async () => {
    const e = await engineOn();
    try {
      const chunks = encoded(textReply("ahead", { id: "msg_ahead" }));
      const { stream, state } = source(chunks);
      const reader = teeBody(stream, follow(e.link, "ahead"), options()).getReader();
      await reader.read();
      await settle();
      assert.ok(state.pulls <= 2, `source pulled ${state.pulls} times for one client read`);
      await reader.cancel();
    } finally {
      await e.close();
    }
  });

  it("a client that leaves cancels the source, and the engine keeps what it saw as a client-cut answer", async () => {
    const e = await engineOn();
    try {
      const chunks = encoded(textReply("the user saw this much and then left", { id: "msg_left", deltas: 6 }));
      const { stream, state } = source(chunks);
      const reader = teeBody(stream, follow(e.link, "left"), options()).getReader();
      for (let i = 0; i < 4; i++) await reader.read();
      await reader.cancel("client went away");
      assert.equal(state.wasCancelled, true);
      assert.equal(state.cancelled, "client went away");
      await e.link.query("mirror.flush", 2000);
      const answer = allRecords(`${e.root}/left`).find(isAssistant) as { message: { stop_reason: string } };
      assert.equal(answer.message.stop_reason, "interrupted");
      assert.equal((await e.link.query("stats")).interrupted, 1);
    } finally {
      await e.close();
    }
  });

  for (const gone of [false, true]) {
    it(`a failing source errors the client's stream; the engine hears who cut it (client gone: ${gone})`, async () => {
      const e = await engineOn();
      try {
        const chunks = encoded(textReply("cut short by a reset", { id: "msg_reset", deltas: 4 }));
        const broke: unknown[] = [];
        const reader = teeBody(
          source(chunks, 4).stream,
          follow(e.link, `reset-${gone}`),
          options({ clientGone: () => gone, upstreamBroke: (x) => broke.push(x) }),
        ).getReader();
        for (let i = 0; i < 4; i++) await reader.read();
        await assert.rejects(reader.read(), /upstream reset/);
        assert.equal(broke.length, gone ? 0 : 1);
        await e.link.query("mirror.flush", 2000);
        const answer = allRecords(`${e.root}/reset-${gone}`).find(isAssistant) as { message: { stop_reason: string } } | undefined;
        assert.equal(answer?.message.stop_reason, "interrupted");
      } finally {
        await e.close();
      }
    });
  }

  it("a request the engine cannot read is not followed: its answer passes unchanged before the engine read a byte, the skip is logged", async () => {
    const e = await heldEngine();
    try {
      const chunks = encoded(textReply("not mirrored", { id: "msg_skip" }));
      const observer = follow(e.link, "unreadable", SSE_HEADERS, enc.encode("{ not json"));
      assert.ok((await readAll(teeBody(source(chunks).stream, observer, options()))).equals(Buffer.concat(chunks)));
      assert.ok(e.queue.some((m) => m.t === "end"), "the whole answer went by while the engine held every message");
      e.release();
      const stats = await e.link.query("stats");
      assert.equal(stats.skipped, 1);
      assert.equal(stats.responses, 0);
      assert.equal(stats.following, 0, "a skipped request is forgotten (the relay sends nothing more about it)");
    } finally {
      await e.close();
    }
  });

  it("an answer the engine cannot read is skipped and counted, unmirrored, not an internal error; the client still gets every byte", async () => {
    const e = await engineOn();
    try {
      const chunks = encoded(['{"type":"message",', "this is not JSON"]);
      const observer = follow(e.link, "bad-json", new Headers({ "content-type": "application/json" }));
      assert.ok((await readAll(teeBody(source(chunks).stream, observer, options()))).equals(Buffer.concat(chunks)));
      const stats = await e.link.query("stats");
      assert.equal(stats.skipped, 1);
      assert.equal(stats.errors, 0);
      assert.equal(stats.failedResponses, 0);
    } finally {
      await e.close();
    }
  });

  it("once the engine has stopped, every byte passes with nothing sent to it, and it was said once", async () => {
    const e = await heldEngine();
    try {
      const observer = follow(e.link, "stopped");
      const sent = e.queue.length;
      e.link.fail("stopped by the test");
      e.link.fail("stopped again");
      const chunks = encoded(textReply("after the engine", { id: "msg_after" }));
      assert.ok((await readAll(teeBody(source(chunks).stream, observer, options()))).equals(Buffer.concat(chunks)));
      assert.equal(e.queue.length, sent, "nothing of the answer was sent to a stopped engine, so nothing of it can be waited for");
      assert.equal(e.said.filter((l) => l.includes("mirror engine stopped")).length, 1);
      assert.equal(e.link.stopped, "stopped by the test", "the first reason, which health gives");
      assert.equal(e.link.openFor(new Headers({ "x-claude-code-session-id": "x" }), Date.now()), null);
    } finally {
      await e.close();
    }
  });

  it("an engine that falls far behind never slows the relay: the mirror gives up on that answer (counted, logged), keeps its prompt, and memory stays bounded", async () => {
    const e = await heldEngine({ SESSIONTAP_MAX_SESSIONS: "8", SESSIONTAP_MAX_QUEUED: "10", SESSIONTAP_MAX_MESSAGE_BYTES: String(1 << 20) });
    const posted = () => e.queue.reduce((n, m) => n + (m.t === "chunks" ? m.bytes.byteLength : 0), 0);
    try {
      const delta = sseEvent("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "z".repeat(64 * 1024) } });
      const events = textReply("x", { id: "msg_behind" });
      const chunks = [...events.slice(0, 3), ...Array.from({ length: 512 }, () => delta), ...events.slice(3)].map((e) => enc.encode(e)); // 32 MiB
      const total = chunks.reduce((n, c) => n + c.byteLength, 0);
      const client = await readAll(teeBody(source(chunks).stream, follow(e.link, "behind"), options()));
      assert.equal(client.byteLength, total, "the client got every byte while the engine read none");
      assert.ok(posted() <= MAX_UNREAD + 64 * 1024 + 256, `${posted()} bytes went to an engine that read none (bound ${MAX_UNREAD})`);
      e.release();
      await within(e.link.query("mirror.flush", 2000), 5000, "the engine to catch up");
      const stats = await e.link.query("stats");
      assert.equal(stats.gaveUp, 1);
      assert.equal(stats.errors, 0);
      assert.ok(readEvents(e.root).some((x) => x.action === "give-up" && x.dir === "behind"), "the events log names it");
      assert.deepEqual(allRecords(`${e.root}/behind`).map((r) => r.type), ["user"], "the prompt is kept, the answer is not");
      assert.ok((await e.link.health())!.problems.some((p) => /1 answer given up/.test(p)), "health says so");
      assert.equal(e.said.filter((l) => /fell behind the relay and gave up on an answer of behind/.test(l)).length, 1, `stderr says so once: ${e.said}`);
      // The next answer, with the engine caught up, is followed as ever.
      assert.ok((await readAll(teeBody(source(encoded(textReply("y", { id: "msg_after" }))).stream, follow(e.link, "after"), options()))).byteLength > 0);
      await e.link.query("mirror.flush", 2000);
      assert.deepEqual(allRecords(`${e.root}/after`).map((r) => r.type), ["user", "assistant"]);
    } finally {
      await e.close();
    }
  });
});
