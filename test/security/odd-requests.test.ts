// Odd requests made whole before the app (docs/RELIABILITY.md "Trust boundaries", hole 8), unit by unit: what soundRequest
// makes of a request's Host, and how an internal error is described without quoting the request. The
// raw-socket reproductions against a real process are in processes.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { soundRequest } from "../../src/runtime/index.ts";
import { describeBare } from "../../src/utils/describe-error.ts";

const request = (url: string, host: string | null) => {
  const r = new Request(url.startsWith("/") ? `http://placeholder${url}` : url);
  const headers = new Headers(r.headers);
  if (host === null) headers.delete("host");
  else headers.set("host", host);
  // A runtime hands over what it parsed: a bare path when the client named no host (Bun, HTTP/1.0).
  return url.startsWith("/") ? ({ url, headers, method: "GET" } as unknown as Request) : new Request(url, { headers });
};

describe("soundRequest()", () => {
  it("keeps a request whose Host is a host name or address", () => {
    for (const host of ["127.0.0.1:8787", "localhost", "[::1]:8787", "tap.lan", "my_box.local:80"]) {
      const r = request(`http://${host}/v1/messages?beta=true`, host);
      assert.ok(!(soundRequest(r, "127.0.0.1:8787") instanceof Response), host);
    }
  });

  it("gives a request without a host the listening address, keeping its path and query", () => {
    const made = soundRequest(request("/v1/models?x=1", null), "127.0.0.1:9999");
    assert.ok(!(made instanceof Response));
    assert.equal((made as Request).url, "http://127.0.0.1:9999/v1/models?x=1");
    const empty = soundRequest(request("/_tap/health", "  "), "[::1]:5");
    assert.equal((empty as Request).url, "http://[::1]:5/_tap/health");
  });

  it("answers 400 for a Host that is no host, and for a target that would name another", async () => {
    for (const host of ["a b", "[::1", "x:99999", "x/y", "user@x", "%%%", "x:8a"]) {
      const answer = soundRequest(request("/v1/models?key=SECRET", host), "127.0.0.1:8787");
      assert.ok(answer instanceof Response, host);
      assert.equal(answer.status, 400, host);
      assert.doesNotMatch(await answer.text(), /SECRET|v1\/models/);
    }
    const scheme = soundRequest(request("//evil.example/x", null), "127.0.0.1:8787");
    assert.ok(scheme instanceof Response && scheme.status === 400);
  });
});

describe("describeBare()", () => {
  it("says what failed without quoting the request", () => {
    const line = describeBare(Object.assign(new TypeError("Invalid URL: 'http://a b/v1/models?key=SECRET'"), { code: "ERR_INVALID_URL" }));
    assert.equal(line, "ERR_INVALID_URL: Invalid URL: …");
    assert.doesNotMatch(describeBare(new Error("cannot GET /v1/models?key=SECRET now")), /SECRET|\/v1/);
    assert.doesNotMatch(describeBare(new Error('bad "x-api-key: sk-SECRET"')), /SECRET/);
  });
});
