import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { clientResponseHeaders, upstreamRequestHeaders } from "../../src/protocol/headers.ts";

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

  it("narrows accept-encoding to codings the runtime decodes", () => {
    assert.equal(upstreamRequestHeaders(new Headers({ "accept-encoding": "gzip, deflate, br, zstd" })).get("accept-encoding"), "gzip, deflate, br");
    assert.equal(upstreamRequestHeaders(new Headers({ "accept-encoding": "zstd" })).get("accept-encoding"), "identity");
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
    const h = clientResponseHeaders(new Headers({ "content-encoding": "gzip", "content-length": "20", "content-type": "application/json" }));
    assert.equal(h.get("content-encoding"), null);
    assert.equal(h.get("content-length"), null);
    assert.equal(h.get("content-type"), "application/json");
  });

  it("keeps the label of a coding the runtime's fetch does not decode, and drops it for one it does", () => {
    assert.equal(clientResponseHeaders(new Headers({ "content-encoding": "zstd" })).get("content-encoding"), "zstd");
    assert.equal(clientResponseHeaders(new Headers({ "content-encoding": "zstd" }), ["gzip", "deflate", "br", "zstd"]).get("content-encoding"), null);
  });

  it("keeps retry-after, request-id and every set-cookie", () => {
    const up = new Headers({ "retry-after": "7", "request-id": "req_1", "transfer-encoding": "chunked" });
    up.append("set-cookie", "a=1");
    up.append("set-cookie", "b=2");
    const h = clientResponseHeaders(up);
    assert.equal(h.get("retry-after"), "7");
    assert.equal(h.get("request-id"), "req_1");
    assert.equal(h.get("transfer-encoding"), null);
    assert.deepEqual(h.getSetCookie(), ["a=1", "b=2"]);
  });
});
