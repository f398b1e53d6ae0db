// Every content coding an upstream may send, asked for or not (docs/RELIABILITY.md "Trust boundaries"):
// the client gets either the upstream's bytes under the upstream's `content-encoding`, or the decoded bytes
// with no coding header (and no stale length) — never decoded bytes still labelled, nor coded bytes
// unlabelled. Read on the wire with node:http, which decodes nothing; the stub sends each coding raw.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { request as httpRequest } from "node:http";
import * as zlib from "node:zlib";
import type { StubUpstream } from "../support/stub-upstream.ts";
import { readEvents, type TestTap, withTap } from "../support/tap.ts";
import { textReply } from "../support/sse-build.ts";

/** A request with node:http: what the client really got on the wire. */
function onTheWire(url: string, accept: string | null, body: string): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  const headers: Record<string, string> = { "content-type": "application/json", "x-api-key": "sk-test", "x-claude-code-session-id": "codings" };
  if (accept !== null) headers["accept-encoding"] = accept;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

const plain = Buffer.from(JSON.stringify({ type: "message", id: "msg_c", role: "assistant", content: [{ type: "text", text: "coded ".repeat(300) }] }));
const sse = Buffer.from(textReply("streamed through a coding").join(""));
const gz = (b: Buffer) => zlib.gzipSync(b);
// Both runtimes' node:zlib have it (the Node 20 types this repository checks with do not).
const zstdCompressSync = (zlib as unknown as { zstdCompressSync(b: Buffer): Buffer }).zstdCompressSync;
const deflateSync = (b: Buffer) => zlib.deflateSync(b);
const brotliCompressSync = (b: Buffer) => zlib.brotliCompressSync(b);
/** Each coding label, and the bytes an upstream sends under it. */
const CODINGS: [label: string | null, encode: (b: Buffer) => Buffer][] = [
  [null, (b) => b],
  ["identity", (b) => b],
  ["gzip", gz],
  ["GZIP", gz],
  ["x-gzip", gz],
  ["deflate", (b) => deflateSync(b)],
  ["br", (b) => brotliCompressSync(b)],
  ["zstd", (b) => zstdCompressSync(b)],
  ["gzip, gzip", (b) => gz(gz(b))],
  ["deflate, gzip", (b) => gz(deflateSync(b))],
  ["gzip, identity", gz],
  ["identity, gzip", gz],
  ["gzip, zstd", (b) => zstdCompressSync(gz(b))],
  ["x-custom", (b) => Buffer.concat([Buffer.from([0xfe, 0x01]), b])],
  ["compress", (b) => Buffer.concat([Buffer.from([0x1f, 0x9d]), b])],
];

describe("passthrough: every content coding arrives truthfully labelled", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  withTap((started) => ({ stub, tap } = started));

  for (const accept of ["gzip, deflate, br, zstd", "identity", null]) {
    for (const [label, encode] of CODINGS) {
      for (const [kind, body, type] of [["JSON", plain, "application/json"], ["SSE", sse, "text/event-stream"]] as const) {
        it(`${kind} under ${JSON.stringify(label)}, the client accepting ${JSON.stringify(accept)}`, async () => {
          const coded = encode(body);
          const headers: Record<string, string> = { "content-type": type, "content-length": String(coded.byteLength), "request-id": "req_coding" };
          if (label !== null) headers["content-encoding"] = label;
          stub.enqueue({ kind: "raw", status: 200, body: new Uint8Array(coded), headers });
          const request = JSON.stringify({ model: "m", stream: kind === "SSE", messages: [{ role: "user", content: `coding ${label} ${kind}` }] });
          const got = await onTheWire(`${tap.url}/v1/messages`, accept, request);
          assert.equal(got.status, 200);
          const said = got.headers["content-encoding"] as string | undefined;
          const length = got.headers["content-length"] as string | undefined;
          if (said === undefined || said === "identity") {
            assert.ok(got.body.equals(body), `unlabelled bytes must be the decoded body (got ${got.body.byteLength} bytes, label ${label})`);
          } else {
            assert.equal(said, label, "a label kept is the upstream's own");
            assert.ok(got.body.equals(coded), `labelled ${said}: the upstream's bytes, unchanged`);
          }
          assert.ok(length === undefined || Number(length) === got.body.byteLength, `content-length ${length} for ${got.body.byteLength} bytes`);
          await tap.settled();
        });
      }
    }
  }

  it("the mirror skipped what it could not read, and failed on nothing", () => {
    const events = readEvents(tap.root);
    assert.deepEqual(events.filter((e) => e.action === "error"), [], "no internal error");
    assert.ok(events.some((e) => e.action === "skip" && String(e.reason).includes("content-encoded")), "a body left coded is skipped, said");
    assert.ok(events.some((e) => e.action === "append"), "a decoded body is mirrored");
  });

  it("the upstream is offered only plain codings that both runtimes decode when asked", async () => {
    for (
      const [accept, offered] of [
        ["gzip, deflate, br, zstd", "gzip, br"],
        ["zstd, deflate", "identity"],
        ["gzip;q=0, br", "br"],
        ["*", "gzip, br"],
        [null, "gzip, br"],
      ] as const
    ) {
      stub.enqueue({ kind: "raw", status: 200, body: "{}", headers: { "content-type": "application/json" } });
      await onTheWire(`${tap.url}/v1/models`, accept, "");
      assert.equal(stub.requests.at(-1)!.headers["accept-encoding"], offered, `for ${accept}`);
    }
  });
});
