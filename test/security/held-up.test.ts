// What held up against the attack pass keeps holding, against a real process (the compiled binary when
// SESSIONTAP_BINARY is set): request smuggling, CORS and slow-loris. The other kept checks live beside
// the features they guard (docs/RELIABILITY.md "Trust boundaries").
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { serveTap, type TapChild } from "../support/child.ts";
import { rawExchange, statusOf } from "../support/raw-http.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";

const MS = 60_000;

describe("what held up against the attack pass keeps holding", () => {
  let stub: StubUpstream;
  let scratch: string;
  let tap: TapChild;
  let port: number;
  let url: string;
  before(async () => {
    stub = await startStub();
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-held-`);
    ({ tap, port, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", `${scratch}/mirror`], { env: { HOME: scratch } }));
  });
  after(async () => {
    tap?.signal("SIGTERM");
    await tap?.exit();
    await stub.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("request smuggling: conflicting or doubled framing is a 400 and nothing reaches the upstream", { timeout: MS }, async () => {
    const before = stub.requests.length;
    const cases = [
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 30\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 30\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\nContent-Length: 3\r\n\r\nabcGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
    ];
    for (const raw of cases) {
      const answer = await rawExchange(port, raw, 3000);
      assert.equal(statusOf(answer), 400, JSON.stringify(answer.slice(0, 120)));
      assert.equal((answer.match(/HTTP\/1\.1 \d{3}/g) ?? []).length, 1, "one answer: no second request was read from the body");
    }
    assert.equal(stub.requests.length, before, "nothing was forwarded");
  });

  it("CORS: no route grants another origin access, preflight included", { timeout: MS }, async () => {
    for (const path of ["/_tap/api/sessions", "/_tap/health", "/v1/messages"]) {
      const preflight = await fetch(`${url}${path}`, {
        method: "OPTIONS",
        headers: { origin: "https://evil.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
      });
      await preflight.arrayBuffer();
      assert.equal(preflight.headers.get("access-control-allow-origin"), null, path);
      const plain = await fetch(`${url}${path}`);
      await plain.arrayBuffer();
      assert.equal(plain.headers.get("access-control-allow-origin"), null, path);
    }
  });

  it("slow-loris: clients dribbling their headers never stop another client being answered", { timeout: MS }, async () => {
    const sockets = Array.from({ length: 20 }, () => connect(port, "127.0.0.1"));
    const drip = setInterval(() => {
      for (const s of sockets) if (!s.destroyed) s.write("X-Slow: y\r\n");
    }, 100);
    try {
      for (const s of sockets) s.write("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${url}/_tap/health`, { signal: AbortSignal.timeout(10_000) });
        assert.equal(res.status, 200);
        await res.arrayBuffer();
      }
    } finally {
      clearInterval(drip);
      for (const s of sockets) s.destroy();
    }
  });
});
