// The tee seam (src/tap/tee.ts): the second consumer sees exactly the client's bytes, can never change
// them or raise an unhandled rejection, can hold a chunk back only for a bounded time, and a client
// cancel reaches both the observer and the upstream body.
import { after, afterEach, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import process from "node:process";
import { teeBody, type StreamObserver, type TeeOptions } from "../../src/tap/tee.ts";
import { within } from "../support/poll.ts";

const enc = new TextEncoder();
const CHUNKS = ["event: a\n", "data: {\"x\":1}\n\n", "", "é✓🎉", "event: message_stop\ndata: {}\n\n"].map((s) => enc.encode(s));
const ALL = Buffer.concat(CHUNKS);

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

/** An observer that records every call; `overrides` change single methods. */
function recorder(overrides: Partial<StreamObserver> = {}) {
  const calls = { fed: [] as Uint8Array[], ends: 0, aborts: [] as string[] };
  const observer: StreamObserver = {
    feed: (chunk) => void calls.fed.push(chunk.slice()),
    end: () => void calls.ends++,
    abort: (by) => void calls.aborts.push(by),
    ...overrides,
  };
  return { observer, calls };
}

/** Reads a stream to its end (bounded); returns its chunks. */
async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array[]> {
  const reader = stream.getReader();
  const out: Uint8Array[] = [];
  for (let i = 0; i < 10_000; i++) {
    const r = await within(reader.read(), 5000, `read ${i}`);
    if (r.done) return out;
    out.push(r.value);
  }
  throw new Error("stream did not end");
}

describe("tee", () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  let errors: unknown[] = [];
  const options = (extra: Partial<TeeOptions> = {}): TeeOptions => ({
    holdBackMs: 250, onObserverError: (e) => void errors.push(e), clientGone: () => false, ...extra,
  });
  /** One macrotask turn, so a rejection nobody handled would have been reported by now. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

  before(() => void process.on("unhandledRejection", onUnhandled));
  afterEach(async () => {
    await settle();
    assert.deepEqual(unhandled, [], "an unhandled rejection escaped the tee");
    errors = [];
  });
  after(() => void process.off("unhandledRejection", onUnhandled));

  it("the observer receives exactly the client's bytes, chunk for chunk, then end()", async () => {
    const { stream } = source(CHUNKS);
    const { observer, calls } = recorder();
    const client = await readAll(teeBody(stream, observer, options()));
    assert.ok(Buffer.concat(client).equals(ALL));
    assert.deepEqual(calls.fed.map((c) => Buffer.from(c).toString("hex")), client.map((c) => Buffer.from(c).toString("hex")));
    assert.equal(calls.ends, 1);
    assert.deepEqual(calls.aborts, []);
    assert.deepEqual(errors, []);
  });

  it("with no observer the bytes pass unchanged", async () => {
    assert.ok(Buffer.concat(await readAll(teeBody(source(CHUNKS).stream, null, options()))).equals(ALL));
  });

  it("an observer that throws synchronously is dropped, reported once, and changes nothing", async () => {
    let feeds = 0;
    const { observer, calls } = recorder({
      feed: () => {
        if (++feeds === 2) throw new Error("feed blew up");
      },
      end: () => {
        throw new Error("end must not be called after a drop");
      },
    });
    const client = await readAll(teeBody(source(CHUNKS).stream, observer, options()));
    assert.ok(Buffer.concat(client).equals(ALL));
    assert.equal(feeds, 2);
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]), /feed blew up/);
    assert.deepEqual(calls.aborts, []);
  });

  it("an observer whose end() throws still lets the client's stream close normally", async () => {
    const { observer } = recorder({ end: () => { throw new Error("end blew up"); } });
    assert.ok(Buffer.concat(await readAll(teeBody(source(CHUNKS).stream, observer, options()))).equals(ALL));
    assert.equal(errors.length, 1);
  });

  it("an observer that rejects asynchronously changes nothing and raises no unhandled rejection", async () => {
    for (const which of ["feed", "end"] as const) {
      errors = [];
      const reject = () => new Promise<void>((_, no) => setTimeout(() => no(new Error(`${which} rejected`)), 1));
      const { observer } = recorder({ [which]: reject });
      const client = await readAll(teeBody(source(CHUNKS).stream, observer, options()));
      assert.ok(Buffer.concat(client).equals(ALL), which);
      assert.equal(errors.length, 1, which);
      assert.match(String(errors[0]), new RegExp(`${which} rejected`));
    }
  });

  it("a promise that never settles holds each chunk back at most holdBackMs", async () => {
    const holdBackMs = 40;
    const never = () => new Promise<void>(() => {});
    const { observer } = recorder({ feed: never, end: never });
    const started = Date.now();
    const client = await readAll(teeBody(source(CHUNKS).stream, observer, options({ holdBackMs })));
    const took = Date.now() - started;
    assert.ok(Buffer.concat(client).equals(ALL));
    const waits = CHUNKS.length + 1;
    assert.ok(took >= waits * holdBackMs - 10, `took ${took} ms: the observer's promise was not waited for`);
    assert.ok(took < waits * holdBackMs + 2000, `took ${took} ms: the hold-back is not bounded`);
    assert.deepEqual(errors, []);
  });

  it("a write that settles early releases its chunk at once", async () => {
    const { observer } = recorder({ feed: () => Promise.resolve(), end: () => Promise.resolve() });
    const started = Date.now();
    assert.ok(Buffer.concat(await readAll(teeBody(source(CHUNKS).stream, observer, options({ holdBackMs: 5000 })))).equals(ALL));
    assert.ok(Date.now() - started < 2000);
  });

  for (const count of [1, 3]) {
    it(`holdsLastChunk keeps the last of ${count} chunk(s) until end()'s write is done`, async () => {
      let release!: () => void;
      let endCalled!: () => void;
      const ended = new Promise<void>((resolve) => (endCalled = resolve));
      const { observer } = recorder({
        end: () => (endCalled(), new Promise<void>((resolve) => (release = resolve))),
        holdsLastChunk: () => true,
      });
      const chunks = CHUNKS.slice(0, count);
      const reader = teeBody(source(chunks).stream, observer, options({ holdBackMs: 10_000 })).getReader();
      const got: Uint8Array[] = [];
      for (let i = 0; i < count - 1; i++) got.push((await reader.read()).value!);
      let lastArrived = false;
      const last = reader.read().then((r) => ((lastArrived = true), r));
      await within(ended, 5000, "end() being called");
      await settle();
      assert.equal(lastArrived, false, "the last chunk reached the client before its write finished");
      release();
      got.push((await within(last, 5000, "the held chunk")).value!);
      assert.equal((await reader.read()).done, true);
      assert.ok(Buffer.concat(got).equals(Buffer.concat(chunks)));
    });
  }

  it("the tee reads no further ahead of the client than one chunk", async () => {
    const { stream, state } = source(CHUNKS);
    const reader = teeBody(stream, recorder().observer, options()).getReader();
    await reader.read();
    await settle();
    assert.ok(state.pulls <= 2, `source pulled ${state.pulls} times for one client read`);
    await reader.cancel();
  });

  it("a client cancel calls observer.abort(\"client\") and cancels the source", async () => {
    const { stream, state } = source(CHUNKS);
    const { observer, calls } = recorder();
    const reader = teeBody(stream, observer, options()).getReader();
    await reader.read();
    await reader.cancel("client went away");
    assert.deepEqual(calls.aborts, ["client"]);
    assert.equal(calls.ends, 0);
    assert.equal(state.wasCancelled, true);
    assert.equal(state.cancelled, "client went away");
  });

  it("a client cancel still reaches the source when observer.abort throws", async () => {
    const { stream, state } = source(CHUNKS);
    const { observer } = recorder({ abort: () => { throw new Error("abort blew up"); } });
    const reader = teeBody(stream, observer, options()).getReader();
    await reader.read();
    await reader.cancel("bye");
    assert.equal(state.wasCancelled, true);
    assert.equal(errors.length, 1);
  });

  for (const gone of [false, true]) {
    it(`a failing source errors the client's stream and aborts the observer (client gone: ${gone})`, async () => {
      const { observer, calls } = recorder();
      const reader = teeBody(source(CHUNKS, 2).stream, observer, options({ clientGone: () => gone })).getReader();
      await reader.read();
      await reader.read();
      await assert.rejects(reader.read(), /upstream reset/);
      assert.deepEqual(calls.aborts, [gone ? "client" : "upstream"]);
      assert.equal(calls.ends, 0);
    });
  }
});
