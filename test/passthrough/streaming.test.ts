// Streaming through the tap (SPEC §3): no added buffering, no idle cut of a quiet stream, client aborts
// reach the upstream, many concurrent streams stay byte-identical, upstream failures reach the client.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createServer } from "node:net";
import { loadFixture, type RecordedRequest, type StubUpstream, textReply } from "../support/stub-upstream.ts";
import { startTestTap, type TestTap, withTap } from "../support/tap.ts";
import { within } from "../support/poll.ts";

/** Reads from `reader` until `want` bytes arrived (bounded by time); returns them. */
async function readAtLeast(reader: ReadableStreamDefaultReader<Uint8Array>, want: number, ms: number): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let got = 0;
  for (let i = 0; got < want && i < 100_000; i++) {
    const r = await within(reader.read(), ms, `reading byte ${got} of ${want}`);
    if (r.done) break;
    parts.push(r.value);
    got += r.value.byteLength;
  }
  return Buffer.concat(parts);
}

/** A port nothing listens on: bound by the OS, then closed. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

const messagesInit = (text: string, signal?: AbortSignal): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", "x-api-key": "sk-test", "x-claude-code-session-id": "streaming-tests" },
  body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: text }] }),
  signal,
});

describe("passthrough: streaming", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  withTap((started) => ({ stub, tap } = started));

  /** The request the stub received most recently, once it has arrived. */
  const lastRequest = async (count: number): Promise<RecordedRequest> => {
    for (let i = 0; stub.requests.length < count && i < 1000; i++) await within(stub.nextRequest(), 5000, "stub request");
    return stub.requests[count - 1];
  };

  it("the first event reaches the client before the upstream sends the second", async () => {
    const events = textReply("first before second", { deltas: 3 });
    // The stub sends event 1 and then nothing: a tap that buffered would never deliver it.
    stub.enqueue({ kind: "stall-after", chunks: [events[0]] });
    const ac = new AbortController();
    const n = stub.requests.length + 1;
    const res = await within(fetch(tap.url + "/v1/messages", messagesInit("first", ac.signal)), 5000, "response head");
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const first = await readAtLeast(reader, Buffer.byteLength(events[0]), 5000);
    assert.equal(first.toString("utf8"), events[0]);
    ac.abort();
    await reader.read().catch(() => undefined);
    const rec = await lastRequest(n);
    await within(rec.closed, 5000, "upstream request closed");
  });

  it("a stream with a 15 s gap between two events is not cut", { timeout: 60_000 }, async () => {
    const events = textReply("quiet for a while", { deltas: 2 });
    stub.enqueue({ kind: "sse", chunks: events, delayMs: [0, 15_000] });
    const res = await fetch(tap.url + "/v1/messages", messagesInit("gap"));
    const started = Date.now();
    const body = await within(res.text(), 45_000, "the whole quiet stream");
    assert.ok(Date.now() - started >= 14_000, `stream ended after ${Date.now() - started} ms`);
    assert.equal(body, events.join(""));
  });

  for (const how of ["AbortController.abort()", "reader.cancel()"]) {
    it(`a client that leaves mid-stream (${how}) aborts the upstream request`, async () => {
      const events = textReply("abandoned", { deltas: 2 });
      stub.enqueue({ kind: "stall-after", chunks: events.slice(0, 2) });
      const ac = new AbortController();
      const n = stub.requests.length + 1;
      const res = await fetch(tap.url + "/v1/messages", messagesInit("leave", ac.signal));
      const reader = res.body!.getReader();
      await readAtLeast(reader, Buffer.byteLength(events[0]), 5000);
      const rec = await lastRequest(n);
      assert.equal(rec.aborted, false);
      if (how === "reader.cancel()") await reader.cancel("bye");
      else {
        ac.abort();
        await reader.read().catch(() => undefined);
      }
      await within(rec.closed, 5000, "the stub seeing the upstream request close");
      assert.equal(rec.aborted, true);
    });
  }

  it("50 concurrent streams are each byte-identical", { timeout: 60_000 }, async () => {
    const replies = Array.from({ length: 50 }, (_, i) => textReply(`stream ${i} ${"é✓".repeat(i)}`, { id: `msg_c${i}`, deltas: 4 }));
    for (let i = 0; i < 50; i++) {
      stub.enqueue({
        kind: "sse",
        chunks: replies[i],
        headers: { "x-stream": String(i) },
        delayMs: replies[i].map((_, j) => (j === 0 ? 0 : 1 + ((i + j) % 4))),
      });
    }
    const results = await within(
      Promise.all(replies.map(async (_, k) => {
        const res = await fetch(tap.url + "/v1/messages", messagesInit(`concurrent ${k}`));
        return { stream: Number(res.headers.get("x-stream")), body: Buffer.from(await res.arrayBuffer()) };
      })),
      30_000,
      "50 streams",
    );
    const seen = new Set<number>();
    for (const { stream, body } of results) {
      assert.ok(Number.isInteger(stream) && stream >= 0 && stream < 50, `x-stream ${stream}`);
      assert.ok(body.equals(Buffer.from(replies[stream].join(""), "utf8")), `stream ${stream} differs`);
      seen.add(stream);
    }
    assert.equal(seen.size, 50);
  });

  it("an unreachable upstream gives 502 with an Anthropic-shaped error body", async () => {
    await using dead = await startTestTap(`http://127.0.0.1:${await closedPort()}`);
    const res = await within(
      fetch(dead.url + "/v1/messages", { ...messagesInit("anyone there?"), headers: { "x-api-key": "sk-ant-SECRET-502" } }),
      10_000,
      "502",
    );
    assert.equal(res.status, 502);
    assert.match(res.headers.get("content-type") ?? "", /application\/json/);
    const text = await res.text();
    const body = JSON.parse(text);
    assert.deepEqual(Object.keys(body).sort(), ["error", "type"]);
    assert.equal(body.type, "error");
    assert.deepEqual(Object.keys(body.error).sort(), ["message", "type"]);
    assert.equal(body.error.type, "api_error");
    assert.match(body.error.message, /^sessiontap: ./);
    assert.ok(!text.includes("SECRET"), text);
  });

  it("an upstream reset mid-stream makes the client's read fail, not end cleanly", async () => {
    const events = textReply("cut short", { deltas: 3 });
    stub.enqueue({ kind: "reset-after", chunks: events.slice(0, 3) });
    const res = await fetch(tap.url + "/v1/messages", messagesInit("reset"));
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const parts: Uint8Array[] = [];
    let failed: unknown = null;
    for (let i = 0; i < 10_000; i++) {
      try {
        const r = await within(reader.read(), 10_000, "read after reset");
        if (r.done) break;
        parts.push(r.value);
      } catch (error) {
        failed = error;
        break;
      }
    }
    assert.ok(failed !== null, `the stream ended cleanly after ${Buffer.concat(parts).byteLength} bytes`);
    assert.ok(!(failed instanceof Error && /not within/.test(failed.message)), String(failed));
    // What did arrive is a prefix of what the stub sent.
    assert.ok(Buffer.from(events.slice(0, 3).join("")).subarray(0, Buffer.concat(parts).byteLength).equals(Buffer.concat(parts)));
  });

  it("an error event mid-stream is passed through as sent, then the stream ends", async () => {
    const fixture = loadFixture("error_midstream");
    stub.enqueue({ kind: "sse", chunks: [fixture.slice(0, 200), fixture.slice(200)], delayMs: [0, 5] });
    const res = await fetch(tap.url + "/v1/messages", messagesInit("error event"));
    assert.equal(await within(res.text(), 5000, "error_midstream"), fixture);
    assert.ok(fixture.includes("event: error"));
  });
});
