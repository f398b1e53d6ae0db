// Header rules (SPEC §3, RFC 9110 §7.6.1): hop-by-hop headers dropped both ways, host rewritten,
// credentials forwarded, no open proxy, and the tap's own /_tap/ routes never forwarded.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";

const VERSION = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version;
const RUNTIME = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined" ? "bun" : "deno";

/** Writes `text` on a fresh TCP connection and returns everything the server sent until it closed (bounded). */
function rawExchange(port: number, text: string | Uint8Array, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const parts: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${timeoutMs} ms; got ${JSON.stringify(Buffer.concat(parts).toString("latin1").slice(0, 300))}`));
    }, timeoutMs);
    socket.on("connect", () => socket.write(text));
    socket.on("data", (c: Buffer) => parts.push(c));
    socket.on("error", (e) => (clearTimeout(timer), reject(e)));
    socket.on("close", () => (clearTimeout(timer), resolve(Buffer.concat(parts).toString("latin1"))));
  });
}

/** Splits a raw HTTP/1.1 response into status, lower-cased headers and the (de-chunked) body. */
function parseResponse(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const split = raw.indexOf("\r\n\r\n");
  assert.ok(split > 0, `not an HTTP response: ${JSON.stringify(raw.slice(0, 200))}`);
  const [statusLine, ...lines] = raw.slice(0, split).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(":")).trim().toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
  let body = raw.slice(split + 4);
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    let out = "";
    for (let rest = body, i = 0; i < 10_000; i++) {
      const eol = rest.indexOf("\r\n");
      const size = parseInt(rest.slice(0, eol), 16);
      if (!(size > 0)) break;
      out += rest.slice(eol + 2, eol + 2 + size);
      rest = rest.slice(eol + 2 + size + 2);
    }
    body = out;
  }
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? NaN), headers, body };
}

/** One request on a raw socket (`Connection: close` added), answered and parsed. */
async function rawRequest(port: number, head: string, body = ""): Promise<ReturnType<typeof parseResponse>> {
  return parseResponse(await rawExchange(port, `${head}\r\nConnection: close\r\n\r\n${body}`));
}

describe("passthrough: headers", () => {
  let stub: StubUpstream;
  let decoy: StubUpstream;
  let tap: TestTap;
  before(async () => {
    decoy = await startStub();
  });
  withTap((started) => ({ stub, tap } = started));
  after(async () => {
    await decoy?.close();
  });

  it("request headers arrive less hop-by-hop ones, host rewritten, credentials forwarded", async () => {
    const body = `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`;
    stub.enqueue({ kind: "json", status: 200, body: { ok: true } });
    const res = await rawRequest(
      tap.port,
      [
        "POST /v1/messages?beta=true HTTP/1.1",
        `Host: 127.0.0.1:${decoy.port}`,
        "Content-Type: application/json",
        `Content-Length: ${Buffer.byteLength(body)}`,
        "X-Api-Key: sk-ant-api03-SECRETKEY",
        "Authorization: Bearer SECRET-TOKEN",
        "Cookie: a=1; b=2",
        "Anthropic-Version: 2023-06-01",
        "Anthropic-Beta: claude-code-20250219,effort-2025-11-24",
        "X-Claude-Code-Session-Id: 97ca207e-a339-4945-8a67-b4c188d5249f",
        "User-Agent: claude-cli/2.1.328 (external, sdk-cli)",
        "Accept: application/json",
        "Accept-Encoding: gzip, deflate, br, zstd",
        "X-Custom: kept",
        "Connection: close, X-Drop-Me",
        "X-Drop-Me: named by connection",
        "Keep-Alive: timeout=5",
        "TE: trailers",
        "Trailer: X-T",
        "Proxy-Authorization: Basic cHJveHk6c2VjcmV0",
        "Proxy-Connection: keep-alive",
      ].join("\r\n").replace("Connection: close, X-Drop-Me", "Connection: X-Drop-Me"),
      body,
    );
    assert.equal(res.status, 200, JSON.stringify(res));
    assert.equal(decoy.requests.length, 0);
    const h = stub.requests.at(-1)!.headers;
    assert.equal(h.host, `127.0.0.1:${stub.port}`);
    assert.equal(h["x-api-key"], "sk-ant-api03-SECRETKEY");
    assert.equal(h.authorization, "Bearer SECRET-TOKEN");
    assert.equal(h.cookie, "a=1; b=2");
    assert.equal(h["anthropic-version"], "2023-06-01");
    assert.equal(h["anthropic-beta"], "claude-code-20250219,effort-2025-11-24");
    assert.equal(h["x-claude-code-session-id"], "97ca207e-a339-4945-8a67-b4c188d5249f");
    assert.equal(h["user-agent"], "claude-cli/2.1.328 (external, sdk-cli)");
    assert.equal(h.accept, "application/json");
    assert.equal(h["content-type"], "application/json");
    assert.equal(h["x-custom"], "kept");
    assert.equal(h["content-length"], String(Buffer.byteLength(body)));
    // Narrowed to codings the runtime's fetch decodes, so the client never gets a body its headers lie about.
    assert.equal(h["accept-encoding"], "gzip, br");
    for (const gone of ["x-drop-me", "keep-alive", "te", "trailer", "proxy-authorization", "proxy-connection", "transfer-encoding"]) {
      assert.equal(h[gone], undefined, `${gone} must not be forwarded`);
    }
    assert.ok(!/x-drop-me|close/i.test(h.connection ?? ""), `connection: ${h.connection}`);
    assert.equal(Buffer.from(stub.requests.at(-1)!.body).toString(), body);
  });

  it("a chunked request body arrives whole and chunked, as the client framed it: nothing buffers it", async () => {
    stub.enqueue({ kind: "json", status: 200, body: { ok: true } });
    const res = await rawRequest(
      tap.port,
      "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked",
      '5\r\n{"a":\r\n4\r\n"é"\r\n1\r\n}\r\n0\r\n\r\n',
    );
    assert.equal(res.status, 200, JSON.stringify(res));
    const rec = stub.requests.at(-1)!;
    assert.equal(Buffer.from(rec.body).toString("utf8"), `{"a":"é"}`);
    assert.equal(rec.headers["transfer-encoding"], "chunked");
    assert.equal(rec.headers["content-length"], undefined);
  });

  it("a sized request body keeps its content-length upstream, mirrored or not, however the runtime sends it", async () => {
    // 100 KB is read whole first; 3 MB streams where the runtime keeps a streamed body's length (Bun).
    for (const [path, size] of [["/v1/messages", 100_000], ["/v1/messages", 3_000_000], ["/v1/files", 100_000]] as const) {
      stub.enqueue({ kind: "json", status: 200, body: { ok: true } });
      const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(size) }] });
      const res = await fetch(`${tap.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      const rec = stub.requests.at(-1)!;
      assert.equal(rec.headers["content-length"], String(Buffer.byteLength(body)), path);
      assert.equal(rec.headers["transfer-encoding"], undefined, path);
      assert.equal(Buffer.from(rec.body).toString(), body, path);
    }
  });

  it("response headers arrive less hop-by-hop ones", async () => {
    stub.enqueue({
      kind: "raw",
      status: 200,
      body: "{}",
      headers: {
        "content-type": "application/json",
        "x-upstream": "1",
        "anthropic-ratelimit-requests-remaining": "99",
        "proxy-authenticate": "Basic realm=x",
        "x-hop": "named",
        "connection": "x-hop",
        "keep-alive": "timeout=99",
      },
    });
    const res = await fetch(tap.url + "/v1/messages", { method: "POST", body: "{}" });
    assert.equal(await res.text(), "{}");
    assert.equal(res.headers.get("x-upstream"), "1");
    assert.equal(res.headers.get("anthropic-ratelimit-requests-remaining"), "99");
    assert.equal(res.headers.get("proxy-authenticate"), null);
    assert.equal(res.headers.get("x-hop"), null);
    assert.notEqual(res.headers.get("keep-alive"), "timeout=99");
  });

  const hostile: [string, string, string][] = [
    ["absolute-form target", "GET http://127.0.0.1:DECOY/x HTTP/1.1\r\nHost: 127.0.0.1:DECOY", "/x"],
    ["absolute-form target to an unreachable address", "GET http://127.0.0.2:1/x2?q=1 HTTP/1.1\r\nHost: 127.0.0.2:1", "/x2?q=1"],
    ["hostile Host header", "GET /y HTTP/1.1\r\nHost: 127.0.0.1:DECOY", "/y"],
    ["https absolute-form target", "GET https://127.0.0.1:DECOY/z HTTP/1.1\r\nHost: 127.0.0.1:DECOY", "/z"],
    ["double-slash target", "GET //127.0.0.1:DECOY/w HTTP/1.1\r\nHost: 127.0.0.1:DECOY", "/w"],
    ["X-Forwarded-Host", "GET /v HTTP/1.1\r\nHost: 127.0.0.1:DECOY\r\nX-Forwarded-Host: 127.0.0.1:DECOY\r\nForwarded: host=127.0.0.1:DECOY", "/v"],
  ];
  for (const [label, head, wantPath] of hostile) {
    it(`${label} cannot make the tap contact anything but the upstream`, async () => {
      const before = stub.requests.length;
      // A default, not a queued reply: a target the server refuses must not leave a reply queued.
      stub.setDefault({ kind: "raw", status: 200, body: "stub", headers: { "content-type": "text/plain" } });
      const res = await rawRequest(tap.port, head.replaceAll("DECOY", String(decoy.port)))
        .finally(() => stub.setDefault({ kind: "conversation" }));
      assert.equal(decoy.requests.length, 0, "the decoy was contacted");
      if (stub.requests.length === before) {
        // The server refused the target itself; then nothing at all may have been contacted.
        assert.ok(res.status >= 400 && res.status !== 502, JSON.stringify(res));
        return;
      }
      assert.equal(res.status, 200, JSON.stringify(res));
      assert.equal(res.body, "stub");
      const url = stub.requests.at(-1)!.url;
      assert.ok(url === wantPath || url.endsWith(wantPath), `stub saw ${url}, wanted ${wantPath}`);
    });
  }

  it("GET /_tap/health answers ok, version and runtime, and is never forwarded", async () => {
    const before = stub.requests.length;
    for (const path of ["/_tap/health", "/_tap/health?x=1"]) {
      const res = await fetch(tap.url + path);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /application\/json/);
      const health = await res.json();
      assert.equal(health.status, "ok");
      assert.equal(health.version, VERSION);
      assert.equal(health.runtime, RUNTIME);
    }
    assert.equal(stub.requests.length, before);
  });

  for (
    const [method, path] of [["GET", "/_tap/nope"], ["POST", "/_tap/health"], ["GET", "/_tap/health/x"], ["DELETE", "/_tap/sessions/1"], ["PUT", "/_tap/x?y=1"]]
  ) {
    it(`${method} ${path} is a 404 and is not forwarded`, async () => {
      const before = stub.requests.length;
      const res = await fetch(tap.url + path, { method, body: method === "GET" || method === "DELETE" ? undefined : "{}" });
      assert.equal(res.status, 404);
      const body = await res.json();
      assert.equal(body.type, "error");
      assert.equal(stub.requests.length, before);
    });
  }

  it("GET /_tap/ is the viewer's page, served by the tap and not forwarded", async () => {
    const before = stub.requests.length;
    const res = await fetch(tap.url + "/_tap/");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/html/);
    await res.arrayBuffer();
    assert.equal(stub.requests.length, before);
  });

  it("/_tap without a slash is not forwarded either", async () => {
    const before = stub.requests.length;
    const res = await fetch(tap.url + "/_tap", { redirect: "manual" });
    await res.arrayBuffer();
    assert.ok(res.status >= 300 && res.status < 500, String(res.status));
    assert.equal(stub.requests.length, before);
  });
});
