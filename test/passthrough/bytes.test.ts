// Byte identity through the tap (SPEC §3, issue 2): every SSE recording re-split at many chunk boundaries
// reaches the client byte-identical, and request bodies reach the upstream unchanged (10 MiB, non-UTF-8).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { fixtureNames, loadFixture, type StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";

const utf8 = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

/** Deterministic PRNG (mulberry32) so "random" splits are the same on every run. */
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Cuts `bytes` at the given offsets (sorted, deduplicated, inside the range). */
function cutAt(bytes: Uint8Array, offsets: number[]): Uint8Array[] {
  const cuts = [...new Set(offsets.filter((o) => o > 0 && o < bytes.length))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let start = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(bytes.subarray(start, c));
    start = c;
  }
  return out;
}

const every = (bytes: Uint8Array, n: number) => cutAt(bytes, Array.from({ length: Math.ceil(bytes.length / n) }, (_, i) => i * n));
const byEvent = (bytes: Uint8Array) => cutAt(bytes, [...Buffer.from(bytes).toString("latin1").matchAll(/\r?\n\r?\n/g)].map((m) => m.index! + m[0].length));
function randomSplit(bytes: Uint8Array, seed: number): Uint8Array[] {
  const rnd = seeded(seed);
  const offsets: number[] = [];
  for (let at = 0; at < bytes.length;) offsets.push(at += 1 + Math.floor(rnd() * 97));
  return cutAt(bytes, offsets);
}
/** Offset of the second byte of the first multi-byte UTF-8 character, or -1 for pure ASCII. */
const insideMultibyte = (bytes: Uint8Array) => {
  const i = bytes.findIndex((b) => b >= 0xc0);
  return i < 0 ? -1 : i + 1;
};

/** Pauses (1 ms) before at most ~150 evenly spread chunks so the tap sees those boundaries on the wire. */
function pacing(count: number, everyChunk = false): number[] {
  const step = everyChunk ? 1 : Math.max(1, Math.ceil(count / 150));
  return Array.from({ length: count }, (_, i) => (i > 0 && i % step === 0 ? 1 : 0));
}

/** Sends `init` through the tap and returns status, headers and the exact body bytes. */
async function through(tap: TestTap, path: string, init: RequestInit = {}) {
  const res = await fetch(tap.url + path, init);
  return { status: res.status, headers: res.headers, body: new Uint8Array(await res.arrayBuffer()) };
}

const post = (
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): RequestInit => ({ method: "POST", headers: { "content-type": "application/json", "x-api-key": "sk-test", ...headers }, body } as RequestInit);

describe("passthrough: byte identity", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  withTap((started) => ({ stub, tap } = started));

  for (const name of fixtureNames()) {
    it(`${name}.sse arrives byte-identical at every chunking`, { timeout: 60_000 }, async () => {
      const bytes = utf8(loadFixture(name));
      const splits: [string, Uint8Array[], number[]?][] = [
        ["whole", [bytes]],
        ["per event", byEvent(bytes)],
        ["every 7 bytes", every(bytes, 7)],
        ["every 1000 bytes", every(bytes, 1000)],
        ["seeded random 1", randomSplit(bytes, 1)],
        ["seeded random 2", randomSplit(bytes, 0xc0ffee)],
      ];
      if (bytes.length <= 1100) splits.push(["1-byte chunks", every(bytes, 1), pacing(bytes.length, true)]);
      const mb = insideMultibyte(bytes);
      if (mb > 0) splits.push(["inside a UTF-8 character", cutAt(bytes, [mb]), [0, 20]]);
      for (const [label, chunks, delays] of splits) {
        assert.ok(same(Buffer.concat(chunks), bytes), `${label}: the split itself must keep the bytes`);
        stub.enqueue({ kind: "sse", chunks, delayMs: delays ?? pacing(chunks.length), headers: { "request-id": `req_${name}` } });
        const got = await through(tap, "/v1/messages", post(JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: label }] })));
        assert.equal(got.status, 200, label);
        assert.equal(got.headers.get("content-type"), "text/event-stream", label);
        assert.equal(got.headers.get("request-id"), `req_${name}`, label);
        assert.ok(same(got.body, bytes), `${name} split ${label} (${chunks.length} chunks): client bytes differ from the stub's`);
      }
    });
  }

  it("the fixture set includes multi-byte UTF-8, so the in-character split is exercised", () => {
    assert.ok(fixtureNames().some((n) => insideMultibyte(utf8(loadFixture(n))) > 0));
  });

  it("a 10 MiB request body reaches the upstream byte-identical", { timeout: 60_000 }, async () => {
    const big = new Uint8Array(10 * 1024 * 1024);
    const rnd = seeded(42);
    for (let i = 0; i < big.length; i += 4) new DataView(big.buffer).setUint32(i, Math.floor(rnd() * 2 ** 32));
    stub.enqueue({ kind: "json", status: 200, body: { ok: true } });
    const got = await through(tap, "/v1/files", post(big, { "content-type": "application/octet-stream" }));
    assert.equal(got.status, 200);
    const rec = stub.requests.at(-1)!;
    assert.equal(rec.body.byteLength, big.byteLength);
    assert.ok(same(rec.body, big), "10 MiB body changed on the way");
    assert.equal(rec.headers["content-length"], String(big.byteLength));
  });

  it("a 10 MiB JSON Messages request (mirrored) reaches the upstream byte-identical", { timeout: 60_000 }, async () => {
    const json = JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "é✓".repeat(2 * 1024 * 1024) }] });
    const bytes = utf8(json);
    assert.ok(bytes.byteLength >= 10 * 1024 * 1024);
    stub.enqueue({ kind: "sse", chunks: [loadFixture("ts_basic_response")] });
    const got = await through(tap, "/v1/messages", post(bytes, { "x-claude-code-session-id": "big-body-session" }));
    assert.equal(got.status, 200);
    assert.equal(Buffer.from(got.body).toString("utf8"), loadFixture("ts_basic_response"));
    assert.ok(same(stub.requests.at(-1)!.body, bytes));
  });

  it("a non-UTF-8 request body reaches the upstream byte-identical", async () => {
    const body = new Uint8Array([0xff, 0xfe, 0x00, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x90, 0x28, 0xbc, 0x0d, 0x0a, 0x80]);
    for (const path of ["/v1/messages", "/v1/other"]) {
      stub.enqueue({ kind: "json", status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "bad" } } });
      const got = await through(tap, path, post(body));
      assert.equal(got.status, 400);
      assert.ok(same(stub.requests.at(-1)!.body, body), path);
    }
  });
});
