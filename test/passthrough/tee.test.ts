// The tee and the relay's side of the mirror (src/tap/tee.ts, relay-observer.ts, engine-link.ts) against a
// real mirror engine writing real files (in this thread, so a test can make its filesystem hang): the
// client's bytes are never changed, the final event waits for its record to be on disk — checked with the
// answer re-split at every byte boundary — and only for a bounded time, a false candidate costs nothing,
// and every way a stream can end reaches the engine once.
import { after, afterEach, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { startThreadEngine } from "../../src/tap/engine-host.ts";
import { parseConfig } from "../../src/config/parse.ts";
import { engineSettings } from "../../src/cli/start-tap.ts";
import { EngineLink } from "../../src/tap/engine-link.ts";
import { MirrorEngine } from "../../src/mirror/engine.ts";
import type { EngineSettings, FromEngine, ToEngine } from "../../src/mirror/messages.ts";
import { teeBody, type TeeOptions } from "../../src/tap/tee.ts";
import { faultyFs } from "../support/faulty-fs.ts";
import { pollAsync, within } from "../support/poll.ts";
import { messageJson, sseEvent, textReply } from "../support/sse-build.ts";
import { loadFixture } from "../support/stub-upstream.ts";
import { allRecords } from "../support/tap.ts";

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

/** Reads a stream to its end (bounded), calling `each` with everything read so far after every read. */
async function readAll(stream: ReadableStream<Uint8Array>, each: (soFar: string) => void = () => {}): Promise<Buffer> {
  const reader = stream.getReader();
  const out: Uint8Array[] = [];
  for (let i = 0; i < 100_000; i++) {
    const r = await within(reader.read(), 5000, `read ${i}`);
    if (r.done) return Buffer.concat(out);
    out.push(r.value);
    each(Buffer.concat(out).toString("utf8"));
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

/** A real engine in this thread over a scratch mirror root. */
async function engineOn(fs: FsAdapter) {
  const dir = mkdtempSync(`${tmpdir()}/sessiontap-tee-`);
  const root = `${dir}/mirror`;
  mkdirSync(root, { mode: 0o700 });
  const settings = settingsFor(dir);
  const stderr: string[] = [];
  const { link } = await startThreadEngine(settings, { fs, clock: Date.now }, { stderr: (l) => stderr.push(l), wrote: () => {}, alerts: () => {} });
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

/** Opens a followed request on `link` for `session`, its body sent and its 2xx head seen. */
function follow(link: EngineLink, session: string, headers = SSE_HEADERS, body = request(`prompt of ${session}`)) {
  const observer = link.open({ session, agent: null, parentAgent: null, userAgent: "claude-cli/test" }, Date.now())!;
  observer.body({ bytes: body });
  assert.equal(observer.head(200, headers), true);
  return observer;
}

describe("tee and relay observer, with a real engine", () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  const options = (extra: Partial<TeeOptions> = {}): TeeOptions => ({ holdBackMs: 250, clientGone: () => false, ...extra });
  /** One macrotask turn, so a rejection nobody handled would have been reported by now. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

  before(() => void process.on("unhandledRejection", onUnhandled));
  afterEach(async () => {
    await settle();
    assert.deepEqual(unhandled, [], "an unhandled rejection escaped the tee");
  });
  after(() => void process.off("unhandledRejection", onUnhandled));

  it("re-split at every byte boundary: the client's bytes unchanged, the final event released only once its record is on disk, one record", async () => {
    const text = loadFixture("ts_basic_response");
    const bytes = enc.encode(text);
    const e = await engineOn(nodeFs);
    try {
      const step = bytes.length > 3000 ? 3 : 1;
      for (let cut = 1; cut < bytes.length; cut += step) {
        const session = `cut-${cut}`;
        const observer = follow(e.link, session);
        let sawFinal = false;
        const client = await readAll(
          teeBody(source([bytes.subarray(0, cut), bytes.subarray(cut)]).stream, observer, options({ holdBackMs: 10_000 })),
          (soFar) => {
            if (sawFinal || !soFar.includes('"type":"message_stop"')) return;
            sawFinal = true;
            const answers = allRecords(`${e.root}/${session}`).filter(isAssistant);
            assert.equal(answers.length, 1, `cut ${cut}: the final event reached the client before its record was written`);
          },
        );
        assert.ok(client.equals(bytes), `cut ${cut}: the client's bytes changed`);
        assert.ok(sawFinal, `cut ${cut}`);
      }
      // And every byte its own chunk.
      const observer = follow(e.link, "bytewise");
      const chunks = [...bytes].map((b) => Uint8Array.of(b));
      assert.ok((await readAll(teeBody(source(chunks).stream, observer, options({ holdBackMs: 10_000 })))).equals(bytes));
      await e.link.query("flush", 2000);
      assert.equal(allRecords(`${e.root}/bytewise`).filter(isAssistant).length, 1);
      const stats = await e.link.query("stats", null);
      assert.equal(stats.late, 0);
      assert.equal(stats.errors, 0);
    } finally {
      await e.close();
    }
  });

  it("a write that never finishes holds the final event at most holdBackMs, counts it late, and changes no byte", async () => {
    const faults = faultyFs();
    const e = await engineOn(faults.fs);
    try {
      faults.set("hang");
      const chunks = encoded(textReply("held back", { id: "msg_hang" }));
      const started = Date.now();
      const client = await readAll(teeBody(source(chunks).stream, follow(e.link, "hang"), options({ holdBackMs: 60 })));
      const took = Date.now() - started;
      assert.ok(client.equals(Buffer.concat(chunks)));
      assert.ok(took >= 55, `took ${took} ms: the final event did not wait for its write`);
      assert.ok(took < 2000, `took ${took} ms: the hold-back is not bounded`);
      assert.equal((await e.link.query("stats", null)).late, 1);
      faults.heal();
      await e.link.query("flush", 2000);
      assert.equal(allRecords(`${e.root}/hang`).filter(isAssistant).length, 1, "written once the disk came back");
    } finally {
      faults.heal();
      await e.close();
    }
  });

  it('"message_stop" inside an answer\'s text is a false candidate: one question to the engine, no wait', async () => {
    const e = await engineOn(nodeFs);
    try {
      const chunks = encoded(textReply("the event is called message_stop, and this text mentions it", { id: "msg_false" }));
      const started = Date.now();
      const client = await readAll(teeBody(source(chunks).stream, follow(e.link, "false-candidate"), options({ holdBackMs: 10_000 })));
      assert.ok(client.equals(Buffer.concat(chunks)));
      assert.ok(Date.now() - started < 2000, "a false candidate held the stream to the bound");
      await e.link.query("flush", 2000);
      const answer = allRecords(`${e.root}/false-candidate`).find(isAssistant) as { message: { content: { text: string }[] } };
      assert.match(answer.message.content[0].text, /called message_stop/);
    } finally {
      await e.close();
    }
  });

  it("a non-streaming answer's last chunk waits for its write; the others flow", async () => {
    const faults = faultyFs();
    const e = await engineOn(faults.fs);
    try {
      const json = JSON.stringify(messageJson("msg_json", "m", [{ type: "text", text: "whole" }], "end_turn"));
      const chunks = encoded([json.slice(0, 10), json.slice(10, 30), json.slice(30)]);
      faults.set("hang");
      const observer = follow(e.link, "json", new Headers({ "content-type": "application/json" }));
      const reader = teeBody(source(chunks).stream, observer, options({ holdBackMs: 10_000 })).getReader();
      const got = [(await within(reader.read(), 5000, "first")).value!, (await within(reader.read(), 5000, "second")).value!];
      let lastArrived = false;
      const last = reader.read().then((r) => ((lastArrived = true), r));
      await pollAsync(() => faults.hung(), (n) => n > 0, 5000, "the write to start");
      await settle();
      assert.equal(lastArrived, false, "the last chunk reached the client before its write finished");
      faults.heal();
      got.push((await within(last, 5000, "the held chunk")).value!);
      assert.equal((await reader.read()).done, true);
      assert.equal(Buffer.concat(got).toString(), json);
    } finally {
      faults.heal();
      await e.close();
    }
  });

  it("the tee reads no further ahead of the client than one chunk", async () => {
    const e = await engineOn(nodeFs);
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
    const e = await engineOn(nodeFs);
    try {
      const chunks = encoded(textReply("the user saw this much and then left", { id: "msg_left", deltas: 6 }));
      const { stream, state } = source(chunks);
      const reader = teeBody(stream, follow(e.link, "left"), options()).getReader();
      for (let i = 0; i < 4; i++) await reader.read();
      await reader.cancel("client went away");
      assert.equal(state.wasCancelled, true);
      assert.equal(state.cancelled, "client went away");
      await e.link.query("flush", 2000);
      const answer = allRecords(`${e.root}/left`).find(isAssistant) as { message: { stop_reason: string } };
      assert.equal(answer.message.stop_reason, "interrupted");
      assert.equal((await e.link.query("stats", null)).interrupted, 1);
    } finally {
      await e.close();
    }
  });

  for (const gone of [false, true]) {
    it(`a failing source errors the client's stream; the engine hears who cut it (client gone: ${gone})`, async () => {
      const e = await engineOn(nodeFs);
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
        await e.link.query("flush", 2000);
        const answer = allRecords(`${e.root}/reset-${gone}`).find(isAssistant) as { message: { stop_reason: string } } | undefined;
        assert.equal(answer?.message.stop_reason, "interrupted");
      } finally {
        await e.close();
      }
    });
  }

  it("a request the engine cannot read is not followed: its answer passes unchanged, nothing is held, the skip is logged", async () => {
    const e = await engineOn(nodeFs);
    try {
      const chunks = encoded(textReply("not mirrored", { id: "msg_skip" }));
      const observer = follow(e.link, "unreadable", SSE_HEADERS, enc.encode("{ not json"));
      const started = Date.now();
      assert.ok((await readAll(teeBody(source(chunks).stream, observer, options({ holdBackMs: 10_000 })))).equals(Buffer.concat(chunks)));
      assert.ok(Date.now() - started < 2000);
      const stats = await e.link.query("stats", null);
      assert.equal(stats.skipped, 1);
      assert.equal(stats.responses, 0);
      assert.equal(stats.following, 0, "a skipped request is forgotten (the relay sends nothing more about it)");
    } finally {
      await e.close();
    }
  });

  it("an answer the engine cannot read is one counted error, unmirrored; the client still gets every byte", async () => {
    const e = await engineOn(nodeFs);
    try {
      const chunks = encoded(['{"type":"message",', "this is not JSON"]);
      const observer = follow(e.link, "bad-json", new Headers({ "content-type": "application/json" }));
      assert.ok((await readAll(teeBody(source(chunks).stream, observer, options()))).equals(Buffer.concat(chunks)));
      const stats = await e.link.query("stats", null);
      assert.equal(stats.errors, 1);
      assert.equal(stats.unmirrored, 1);
    } finally {
      await e.close();
    }
  });

  it("once the engine has stopped, every byte passes, nothing is held, and it was said once", async () => {
    const e = await engineOn(nodeFs);
    try {
      const observer = follow(e.link, "stopped");
      e.link.fail("stopped by the test");
      e.link.fail("stopped again");
      const chunks = encoded(textReply("after the engine", { id: "msg_after" }));
      const started = Date.now();
      assert.ok((await readAll(teeBody(source(chunks).stream, observer, options({ holdBackMs: 10_000 })))).equals(Buffer.concat(chunks)));
      assert.ok(Date.now() - started < 2000);
      assert.equal(e.stderr.filter((l) => l.includes("mirror engine stopped")).length, 1);
      assert.match(e.link.problems()[0], /mirror engine stopped \(stopped by the test\)/);
      assert.equal(e.link.open({ session: "x", agent: null, parentAgent: null, userAgent: null }, Date.now()), null);
    } finally {
      await e.link.stop(100).catch((error) => assert.match(String(error), /stopped/));
      rmSync(e.dir, { recursive: true, force: true });
    }
  });

  it("an event that mentions message_stop split across chunks is held whole until it ends", async () => {
    const e = await engineOn(nodeFs);
    try {
      const events = textReply("split final", { id: "msg_split" });
      const whole = events.join("");
      const stop = sseEvent("message_stop", { type: "message_stop" });
      const at = whole.indexOf(stop) + stop.indexOf("message_stop") + 4; // inside the word, then inside its data
      const chunks = encoded([whole.slice(0, at), whole.slice(at, at + 20), whole.slice(at + 20)]);
      let sawFinal = false;
      const client = await readAll(teeBody(source(chunks).stream, follow(e.link, "split"), options({ holdBackMs: 10_000 })), (soFar) => {
        if (sawFinal || !soFar.includes('"type":"message_stop"')) return;
        sawFinal = true;
        assert.equal(allRecords(`${e.root}/split`).filter(isAssistant).length, 1, "released before its record was written");
      });
      assert.equal(client.toString(), whole);
    } finally {
      await e.close();
    }
  });

  it("an engine that falls far behind stops the relay reading (bounded memory), and it reads on once the engine catches up", async () => {
    const dir = mkdtempSync(`${tmpdir()}/sessiontap-behind-`);
    mkdirSync(`${dir}/mirror`, { mode: 0o700 });
    // The engine is real; only its thread is simulated: messages wait until the test lets them through.
    const queue: ToEngine[] = [];
    let paused = true;
    // deliver and engine are defined below; the link posts only once the test starts relaying.
    const link = new EngineLink({ post: (m) => (queue.push(m), deliver()), close: () => {} }, { stderr: () => {}, wrote: () => {}, alerts: () => {} });
    const engine = new MirrorEngine(
      settingsFor(dir, { SESSIONTAP_MAX_SESSIONS: "8", SESSIONTAP_MAX_QUEUED: "10", SESSIONTAP_MAX_MESSAGE_BYTES: String(1 << 20) }),
      {
        fs: nodeFs,
        clock: Date.now,
        post: (m: FromEngine) => queueMicrotask(() => link.receive(m)),
      },
    );
    await engine.start();
    const deliver = () => {
      while (!paused && queue.length > 0) engine.receive(queue.shift()!);
    };
    try {
      const delta = sseEvent("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "z".repeat(64 * 1024) } });
      const events = textReply("x", { id: "msg_behind" });
      const chunks = [...events.slice(0, 3), ...Array.from({ length: 512 }, () => delta), ...events.slice(3)].map((e) => enc.encode(e)); // 32 MiB
      const { stream, state } = source(chunks);
      const observer = follow(link, "behind");
      const reader = teeBody(stream, observer, options()).getReader();
      let read = 0;
      const reading = (async () => {
        for (;;) {
          const r = await reader.read();
          if (r.done) return;
          read += r.value.byteLength;
        }
      })();
      await pollAsync(() => state.pulls, (n) => n > 200, 5000, "the relay to read past the high mark");
      const pulls = state.pulls;
      await new Promise((resolve) => setTimeout(resolve, 100)); // a bare sleep: checking that nothing happens
      assert.equal(state.pulls, pulls, "the relay kept reading while the engine was 16 MiB behind");
      assert.ok(state.pulls < 300, `pulled ${state.pulls} chunks of 64 KiB with the engine reading none`);
      paused = false;
      deliver();
      await within(reading, 10_000, "the stream to finish once the engine caught up");
      assert.equal(read, chunks.reduce((n, c) => n + c.byteLength, 0));
    } finally {
      paused = false;
      deliver();
      await engine.stop(1000);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
