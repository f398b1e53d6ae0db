import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { clientResponseHeaders, fetchDecoded, upstreamRequestHeaders } from "../../src/protocol/headers.ts";

describe("upstreamRequestHeaders()", () => {
  it("drops hop-by-hop headers, the ones `connection` names, host and content-length", () => {
    const h = upstreamRequestHeaders(
      new Headers({
        connection: "keep-alive, x-private-hop",
        "keep-alive": "timeout=5",
        "x-private-hop": "1",
        te: "trailers",
        upgrade: "h2c",
        "proxy-authorization": "secret",
        host: "tap.local",
        "content-length": "10",
        "x-api-key": "sk-test",
        "anthropic-version": "2023-06-01",
      }),
    );
    for (const gone of ["connection", "keep-alive", "x-private-hop", "te", "upgrade", "proxy-authorization", "host", "content-length"]) {
      assert.equal(h.get(gone), null, gone);
    }
    assert.equal(h.get("x-api-key"), "sk-test");
    assert.equal(h.get("anthropic-version"), "2023-06-01");
  });

  it("narrows accept-encoding to codings both runtimes decode when asked", () => {
    assert.equal(upstreamRequestHeaders(new Headers({ "accept-encoding": "gzip, deflate, br, zstd" })).get("accept-encoding"), "gzip, br");
    assert.equal(upstreamRequestHeaders(new Headers({ "accept-encoding": "zstd" })).get("accept-encoding"), "identity");
    assert.equal(upstreamRequestHeaders(new Headers({ "accept-encoding": "br;q=0, gzip;q=0.5" })).get("accept-encoding"), "gzip");
  });
});

describe("fetchDecoded()", () => {
  it("says what each runtime's fetch decodes, as measured", () => {
    for (
      const [coding, bun, deno] of [
        ["gzip", true, true],
        ["br", true, true],
        ["deflate", true, false],
        ["zstd", true, false],
        ["x-gzip", true, false],
        ["gzip, gzip", false, false],
        ["identity, gzip", true, false],
        ["x-custom", false, false],
        ["identity", false, false],
        [null, false, false],
      ] as const
    ) {
      assert.equal(fetchDecoded("bun", coding, "gzip, br"), bun, `bun ${coding}`);
      assert.equal(fetchDecoded("deno", coding, "gzip, br"), deno, `deno ${coding}`);
    }
    assert.equal(fetchDecoded("deno", "gzip", "identity"), false, "Deno decodes only what it asked for");
    assert.equal(fetchDecoded("bun", "gzip", "identity"), true, "Bun decodes it anyway");
  });

  it("keeps the label of a body fetch did not decode", () => {
    const h = clientResponseHeaders(new Headers({ "content-encoding": "gzip, gzip", "content-length": "20" }), false);
    assert.equal(h.get("content-encoding"), "gzip, gzip");
    assert.equal(h.get("content-length"), "20");
  });

  it("keeps every header an AWS signature covers as it is: a signed accept-encoding is not narrowed, a signed header named by `connection` stays", () => {
    const authorization = "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/bedrock/aws4_request, " +
      "SignedHeaders=accept-encoding;host;x-amz-date;x-signed-hop, Signature=" + "0".repeat(64);
    const h = upstreamRequestHeaders(
      new Headers({
        authorization,
        "accept-encoding": "zstd, *;q=0.1",
        connection: "x-signed-hop, x-unsigned-hop",
        "x-signed-hop": "1",
        "x-unsigned-hop": "2",
        host: "h",
      }),
    );
    assert.equal(h.get("accept-encoding"), "zstd, *;q=0.1");
    assert.equal(h.get("x-signed-hop"), "1");
    assert.equal(h.get("x-unsigned-hop"), null);
    assert.equal(h.get("connection"), null);
    assert.equal(h.get("host"), null, "fetch sets it from the upstream, which is the host signed for in proxy mode");
    assert.equal(h.get("authorization"), authorization);
  });
});

describe("clientResponseHeaders()", () => {
  it("drops content-encoding and content-length of a body fetch decoded", () => {
    const h = clientResponseHeaders(new Headers({ "content-encoding": "gzip", "content-length": "20", "content-type": "application/json" }), true);
    assert.equal(h.get("content-encoding"), null);
    assert.equal(h.get("content-length"), null);
    assert.equal(h.get("content-type"), "application/json");
  });

  it("keeps the label and length of a body fetch passed on still coded", () => {
    const h = clientResponseHeaders(new Headers({ "content-encoding": "zstd", "content-length": "9" }), false);
    assert.equal(h.get("content-encoding"), "zstd");
    assert.equal(h.get("content-length"), "9");
  });

  it("keeps retry-after, request-id and every set-cookie", () => {
    const up = new Headers({ "retry-after": "7", "request-id": "req_1", "transfer-encoding": "chunked" });
    up.append("set-cookie", "a=1");
    up.append("set-cookie", "b=2");
    const h = clientResponseHeaders(up, false);
    assert.equal(h.get("retry-after"), "7");
    assert.equal(h.get("request-id"), "req_1");
    assert.equal(h.get("transfer-encoding"), null);
    assert.deepEqual(h.getSetCookie(), ["a=1", "b=2"]);
  });
});
