// Proxy mode (docs/DESIGN.md "Proxy mode"): a client that reaches the API through HTTPS_PROXY, as Claude Code
// does when no ANTHROPIC_BASE_URL is set, has its TLS to api.anthropic.com terminated with the tap's own CA
// and its requests forwarded and mirrored exactly as in base-URL mode, on one kept-alive connection and
// streaming event by event; a host the tap does not know is a blind tunnel whose bytes it never reads. A
// real in-process tap, its real proxy listener and CA on disk; SESSIONTAP_PROXY_UPSTREAM sends the known
// hosts to the loopback stub.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readdirSync, readFileSync } from "node:fs";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import { Incoming, readResponse, sendRequest, tlsThrough } from "../support/proxy-client.ts";
import { sseEvent, startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { type ProxyTap, startProxyTap } from "../support/proxy-tap.ts";
import { allRecords, readEvents, type TestTap } from "../support/tap.ts";
import { makeServerCerts, type TestCerts } from "../support/test-certs.ts";
import { pollUntil } from "../support/poll.ts";

const VERTEX = "us-east5-aiplatform.googleapis.com";
const BEDROCK = "bedrock-runtime.us-east-1.amazonaws.com";

/** A streamed Messages API body of session `session`. */
const messagesBody = (session: string, text: string) =>
  JSON.stringify({
    model: "claude-test",
    max_tokens: 10,
    stream: true,
    metadata: { user_id: JSON.stringify({ session_id: session }) },
    messages: [{ role: "user", content: text }],
  });
const apiHeaders = (session: string) => ({ "content-type": "application/json", "x-api-key": "sk-test-proxy", "x-claude-code-session-id": session });

/** The proxy's part of the tap's health. */
// deno-lint-ignore no-explicit-any
async function proxyHealth(tap: TestTap): Promise<any> {
  return (await (await fetch(`${tap.url}/_tap/health`)).json()).proxy;
}

describe("proxy mode: a known host terminated and mirrored, any other host tunnelled blind", { timeout: 60_000 }, () => {
  let stub: StubUpstream;
  let tap: ProxyTap;
  let ca: string;
  let port: number;

  before(async () => {
    stub = await startStub();
    tap = await startProxyTap(stub.url, ["api.anthropic.com", VERTEX, BEDROCK]);
    [port, ca] = [tap.proxyPort, tap.caPem];
  });

  after(async () => {
    await tap?.close();
    await stub?.close();
  });

  it("a Messages API request is forwarded with its bytes unchanged and mirrored as in base-URL mode", async () => {
    const body = messagesBody("proxied-1", "hello through the proxy");
    const socket = await tlsThrough(port, "api.anthropic.com", 443, ca);
    const incoming = new Incoming(socket);
    const seen = stub.requests.length;
    sendRequest(socket, "POST", "/v1/messages?beta=true", apiHeaders("proxied-1"), body);
    const answer = await readResponse(incoming);
    socket.destroy();
    assert.equal(answer.status, 200);
    assert.match(answer.body.toString("utf8"), /event: message_stop/);
    const got = stub.requests[seen];
    assert.equal(got.url, "/v1/messages?beta=true");
    assert.equal(Buffer.from(got.body).toString("utf8"), body, "the body the upstream got is the client's");
    assert.equal(got.headers["x-api-key"], "sk-test-proxy");
    await tap.settled();
    const records = allRecords(`${tap.root}/proxied-1`);
    assert.deepEqual(records.map((r) => r.type), ["user", "assistant"]);
    assert.equal((records[0].message as { content: unknown }).content, "hello through the proxy");
    assert.equal(records[1].requestId, `req_stub_${seen + 1}`);
  });

  it("one connection carries request after request (keep-alive), each mirrored once", async () => {
    const before = (await proxyHealth(tap)).terminated;
    const socket = await tlsThrough(port, "api.anthropic.com", 443, ca);
    const incoming = new Incoming(socket);
    const history: { role: string; content: string }[] = [];
    for (const prompt of ["first on one connection", "second on the same connection"]) {
      history.push({ role: "user", content: prompt });
      sendRequest(socket, "POST", "/v1/messages", apiHeaders("kept-alive"), JSON.stringify({ model: "m", max_tokens: 5, stream: true, messages: history }));
      const answer = await readResponse(incoming);
      assert.equal(answer.status, 200);
      const text = [...answer.body.toString("utf8").matchAll(/"text":"([^"]*)"/g)].map((m) => m[1]).join("");
      history.push({ role: "assistant", content: text });
    }
    assert.equal(incoming.closed, false, "the connection stays open");
    socket.destroy();
    assert.equal((await proxyHealth(tap)).terminated, before + 1, "one TLS connection");
    await tap.settled();
    assert.deepEqual(allRecords(`${tap.root}/kept-alive`).map((r) => r.type), ["user", "assistant", "user", "assistant"]);
  });

  it("a large body (past the read-first bound on Bun, so streamed there) reaches the upstream whole, with its length, and is mirrored", async () => {
    const big = "x".repeat(2 * 1024 * 1024);
    const body = messagesBody("large-body", big);
    const socket = await tlsThrough(port, "api.anthropic.com", 443, ca);
    const seen = stub.requests.length;
    sendRequest(socket, "POST", "/v1/messages", apiHeaders("large-body"), body);
    const answer = await readResponse(new Incoming(socket));
    socket.destroy();
    assert.equal(answer.status, 200);
    assert.equal(stub.requests[seen].headers["content-length"], String(Buffer.byteLength(body)));
    assert.equal(stub.requests[seen].headers["transfer-encoding"], undefined);
    assert.equal(Buffer.from(stub.requests[seen].body).toString("utf8"), body);
    await tap.settled();
    const records = allRecords(`${tap.root}/large-body`);
    assert.deepEqual(records.map((r) => r.type), ["user", "assistant"]);
    assert.equal((records[0].message as { content: string }).content.length, big.length);
  });

  it("an answer streams event by event, and a client that leaves stops the upstream", async () => {
    const first = sseEvent("message_start", {
      type: "message_start",
      message: { id: "msg_held", type: "message", role: "assistant", model: "m", content: [], usage: {} },
    });
    stub.enqueue({ kind: "stall-after", chunks: [first] });
    const socket = await tlsThrough(port, "api.anthropic.com", 443, ca);
    const incoming = new Incoming(socket);
    const seen = stub.requests.length;
    sendRequest(socket, "POST", "/v1/messages", apiHeaders("streamed"), messagesBody("streamed", "stream please"));
    const chunks: string[] = [];
    let gotFirst!: () => void;
    const firstArrived = new Promise<void>((resolve) => (gotFirst = resolve));
    const reading = readResponse(incoming, (bytes) => {
      chunks.push(bytes.toString("utf8"));
      gotFirst();
    }).catch(() => null);
    // The upstream has sent one event and holds the rest back: that event must reach the client now.
    await firstArrived;
    assert.equal(chunks.join(""), first);
    socket.destroy();
    await reading;
    await stub.requests[seen].closed;
    assert.equal(stub.requests[seen].aborted, true, "the upstream's answer was cut when the client left");
  });

  it("Vertex AI and Bedrock hosts are terminated and forwarded too, and counted by provider", async () => {
    const before = (await proxyHealth(tap)).forwarded;
    const paths: [string, string][] = [
      [VERTEX, "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-x:streamRawPredict"],
      [BEDROCK, "/model/anthropic.claude-x/invoke-with-response-stream"],
    ];
    for (const [host, path] of paths) {
      const socket = await tlsThrough(port, host, 443, ca);
      const seen = stub.requests.length;
      const body = JSON.stringify({ anthropic_version: "vertex-2023-10-16", max_tokens: 5, stream: true, messages: [{ role: "user", content: "hi" }] });
      sendRequest(socket, "POST", path, { host, "content-type": "application/json", authorization: "Bearer provider-credential" }, body);
      const answer = await readResponse(new Incoming(socket));
      socket.destroy();
      assert.equal(answer.status, 404, "the stub does not know the path; the tap passed its answer on");
      assert.equal(stub.requests[seen].url, path);
      assert.equal(Buffer.from(stub.requests[seen].body).toString("utf8"), body);
      assert.equal(stub.requests[seen].headers.authorization, "Bearer provider-credential");
    }
    const after = (await proxyHealth(tap)).forwarded;
    assert.deepEqual(after, { ...before, vertex: before.vertex + 1, bedrock: before.bedrock + 1 });
  });

  describe("a host the tap does not know", () => {
    let certs: TestCerts;
    let far: TlsServer;
    let farPort = 0;
    const received: string[] = [];
    const open = new Set<{ destroy(): void }>();

    before(async () => {
      certs = await makeServerCerts();
      far = createTlsServer({ cert: certs.certPem, key: certs.keyPem }, (s) => {
        open.add(s);
        s.on("close", () => open.delete(s));
        s.on("data", (d: Buffer) => {
          received.push(d.toString("utf8"));
          s.end("far end answers: the-far-secret-reply");
        });
      });
      await new Promise<void>((resolve) => far.listen(0, "127.0.0.1", () => resolve()));
      farPort = (far.address() as { port: number }).port;
    });
    after(() => {
      for (const s of open) s.destroy();
      return new Promise<void>((resolve) => far.close(() => resolve()));
    });

    it("is a blind tunnel: the client sees the far end's own certificate, and the tap never sees the plaintext", async () => {
      const before = await proxyHealth(tap);
      const socket = await tlsThrough(port, "127.0.0.1", farPort, certs.caPem);
      // Trusting only the far end's CA, the client would have refused any certificate the tap made.
      assert.equal(socket.authorized, true);
      assert.equal(socket.getPeerCertificate().subject.CN, "localhost", "the far end's own certificate");
      const incoming = new Incoming(socket);
      socket.write("the-tunnelled-secret-request");
      const reply = (await incoming.rest()).toString("utf8");
      assert.equal(reply, "far end answers: the-far-secret-reply");
      assert.deepEqual(received, ["the-tunnelled-secret-request"]);
      const now = await proxyHealth(tap);
      assert.equal(now.tunnels, before.tunnels + 1);
      assert.equal(now.terminated, before.terminated, "nothing was terminated");
      await tap.settled();
      const written = readdirSync(tap.root, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => readFileSync(`${e.parentPath}/${e.name}`, "utf8"))
        .join("\n");
      assert.ok(!written.includes("secret"), "nothing of the tunnel's content reached the mirror root");
      assert.ok(!JSON.stringify(readEvents(tap.root)).includes(String(farPort)), "nor where it went");
    });
  });

  it("what the proxy did is in health, and the tap is healthy", async () => {
    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.equal(health.status, "ok", JSON.stringify(health.problems));
    assert.equal(health.internalErrors, 0);
    assert.equal(health.proxy.internalErrors, 0);
    assert.equal(health.proxy.port, port);
    assert.equal(health.proxy.ca, tap.proxy!.ca.certPath);
    await pollUntil(() => readEvents(tap.root), (events) => events.some((e) => e.action === "start" && e.proxyPort === port));
  });
});

describe("proxy mode: an upstream that cannot be reached", { timeout: 30_000 }, () => {
  let tap: ProxyTap;
  before(async () => void (tap = await startProxyTap("http://127.0.0.1:9", ["api.anthropic.com"])));
  after(() => tap?.close());

  it("answers 502 as base-URL mode does, and says so on stderr, in health and in the events log", async () => {
    const socket = await tlsThrough(tap.proxyPort, "api.anthropic.com", 443, tap.caPem);
    sendRequest(socket, "POST", "/v1/messages", apiHeaders("unreachable"), messagesBody("unreachable", "anyone there?"));
    const answer = await readResponse(new Incoming(socket));
    socket.destroy();
    assert.equal(answer.status, 502);
    assert.match(JSON.parse(answer.body.toString("utf8")).error.message, /^sessiontap: upstream 127\.0\.0\.1:9 could not be reached/);
    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.equal(health.status, "degraded");
    assert.match(health.problems.join("\n"), /^upstream: 127\.0\.0\.1:9 failing since /m);
    assert.equal(health.proxy.upstreams["http://127.0.0.1:9"].failing, true);
    assert.match(
      tap.stderrLines.join("\n"),
      /upstream 127\.0\.0\.1:9 cannot be reached .*Check the network, or SESSIONTAP_PROXY_UPSTREAM where it names the host/,
    );
    await tap.settled();
    const logged = await pollUntil(() => readEvents(tap.root), (events) => events.some((e) => e.action === "upstream-error"));
    assert.equal(logged.find((e) => e.action === "upstream-error")?.upstream, "127.0.0.1:9");
  });
});
