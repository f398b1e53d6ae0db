// What the proxy does with input it cannot use (docs/DESIGN.md "Proxy mode"): a CONNECT target that does not
// parse, a TLS handshake that fails or stalls, plain HTTP inside a tunnel, a client that never sends
// anything, a request it cannot read — each gets a clean answer or a close within the bound, exactly one
// events-log line with the reason, and the tap goes on serving; a client that does not trust the tap's CA
// also gets the tap to say on stderr what to set. And the doors: a tap with a token answers no CONNECT
// without it, and one with tunnels off refuses every host it does not know. In-process taps, real sockets.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { connect as netConnect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { connectThrough, Incoming, readResponse, sendRequest, tlsThrough } from "../support/proxy-client.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { type ProxyTap, startProxyTap } from "../support/proxy-tap.ts";
import { readEvents, type TestTap } from "../support/tap.ts";
import { pollUntil } from "../support/poll.ts";
import { TokenGate } from "../../src/server/request-guard.ts";

const TIMEOUT_MS = 400;
const PROXY_EVENTS = new Set(["proxy-refused", "proxy-failed", "proxy-uncovered"]);
const proxyEvents = (tap: TestTap) => readEvents(tap.root).filter((e) => PROXY_EVENTS.has(String(e.action)));

/** Runs `act` and waits for the one proxy events-log line it must cause (and checks no second one came with it). */
async function oneEvent(tap: TestTap, act: () => Promise<void>): Promise<Record<string, unknown>> {
  const before = proxyEvents(tap).length;
  await act();
  const events = await pollUntil(() => proxyEvents(tap), (e) => e.length > before, 5_000, "the events-log line");
  await tap.settled();
  assert.equal(proxyEvents(tap).length, before + 1, `one line, got ${JSON.stringify(proxyEvents(tap).slice(before))}`);
  return events[before];
}

/** Sends raw bytes to the proxy port and reads what comes back until it closes. */
async function rawToProxy(port: number, bytes: string | Uint8Array): Promise<string> {
  const socket = netConnect({ host: "127.0.0.1", port });
  const incoming = new Incoming(socket);
  await new Promise((resolve) => socket.once("connect", resolve));
  if (bytes.length > 0) socket.write(bytes);
  return (await incoming.rest(5_000)).toString("utf8");
}

/** A tunnel to api.anthropic.com opened, then `bytes` sent in it; resolves with what came back before the close, and how long it took. */
async function intoTunnel(port: number, bytes: Uint8Array | string): Promise<{ text: string; ms: number }> {
  const tunnel = await connectThrough(port, "api.anthropic.com:443");
  assert.equal(tunnel.status, 200);
  const started = Date.now();
  if (bytes.length > 0) tunnel.socket.write(bytes);
  const text = (await tunnel.incoming.rest(5_000)).toString("utf8");
  return { text, ms: Date.now() - started };
}

describe("bad input to the proxy", { timeout: 60_000 }, () => {
  let stub: StubUpstream;
  let tap: ProxyTap;
  let port: number;
  let ca: string;

  before(async () => {
    stub = await startStub();
    tap = await startProxyTap(stub.url, ["api.anthropic.com"], { SESSIONTAP_PROXY_TIMEOUT_MS: String(TIMEOUT_MS) });
    [port, ca] = [tap.proxyPort, tap.caPem];
  });

  after(async () => {
    await tap?.close();
    await stub?.close();
  });

  for (
    const [target, why] of [["api.anthropic.com", "no port"], ["api.anthropic.com:99999", "a port out of range"], ["[::1:443", "a broken IPv6 address"], [
      "exa_mple.com:443",
      "a name that is not a host name",
    ], ["user@host:443", "credentials"]]
  ) {
    it(`a CONNECT to ${target} (${why}) is a 400 naming the form, one line, and nothing else`, async () => {
      let answer = "";
      const event = await oneEvent(tap, async () => void (answer = await rawToProxy(port, `CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`)));
      assert.match(answer, /^HTTP\/1\.1 400 /);
      assert.match(answer, /CONNECT takes host:port/);
      assert.deepEqual({ action: event.action, reason: event.reason }, { action: "proxy-refused", reason: "bad-target" });
      assert.ok(!JSON.stringify(event).includes(target.split(":")[0]), "the target is not logged");
    });
  }

  it("a request line that is not HTTP, a head past 16 KiB and a method other than CONNECT are refused the same way", async () => {
    const cases: [string, RegExp, string][] = [
      ["HELLO\r\n\r\n", /^HTTP\/1\.1 400 /, "bad-head"],
      [`CONNECT api.anthropic.com:443 HTTP/1.1\r\nx-pad: ${"a".repeat(20_000)}\r\n\r\n`, /^HTTP\/1\.1 431 /, "head-too-large"],
      ["GET http://example.com/ HTTP/1.1\r\nhost: example.com\r\n\r\n", /^HTTP\/1\.1 405 [^]*allow: CONNECT/i, "not-connect"],
    ];
    for (const [bytes, status, reason] of cases) {
      let answer = "";
      const event = await oneEvent(tap, async () => void (answer = await rawToProxy(port, bytes)));
      assert.match(answer, status);
      assert.equal(event.reason, reason);
    }
  });

  it("a client that connects and sends nothing gets a 408 within the bound", async () => {
    const started = Date.now();
    let answer = "";
    const event = await oneEvent(tap, async () => void (answer = await rawToProxy(port, "")));
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.ok(Date.now() - started >= TIMEOUT_MS - 50 && Date.now() - started < TIMEOUT_MS + 3_000, `${Date.now() - started} ms`);
    assert.equal(event.reason, "head-timeout");
  });

  it("a client that opens a tunnel to a known host and sends nothing is closed within the bound", async () => {
    let closed = { text: "", ms: 0 };
    const event = await oneEvent(tap, async () => void (closed = await intoTunnel(port, "")));
    assert.equal(closed.text, "");
    assert.ok(closed.ms >= TIMEOUT_MS - 50 && closed.ms < TIMEOUT_MS + 3_000, `${closed.ms} ms`);
    assert.deepEqual({ action: event.action, reason: event.reason, host: event.host }, {
      action: "proxy-failed",
      reason: "handshake-timeout",
      host: "api.anthropic.com",
    });
  });

  it("a handshake that stalls part-way is closed within the bound", async () => {
    let closed = { text: "", ms: 0 };
    const event = await oneEvent(tap, async () => void (closed = await intoTunnel(port, new Uint8Array([22, 3, 1]))));
    assert.ok(closed.ms >= TIMEOUT_MS - 50 && closed.ms < TIMEOUT_MS + 3_000, `${closed.ms} ms`);
    assert.equal(event.reason, "handshake-timeout");
  });

  it("a handshake that fails (a TLS record that is not a ClientHello) is closed at once", async () => {
    let closed = { text: "", ms: 0 };
    const event = await oneEvent(tap, async () => void (closed = await intoTunnel(port, new Uint8Array([22, 3, 1, 0, 5, 1, 2, 3, 4, 5]))));
    assert.ok(closed.ms < TIMEOUT_MS, `${closed.ms} ms`);
    assert.equal(event.reason, "handshake-failed");
  });

  it("plain HTTP inside the tunnel gets a plain 400 that says to use https", async () => {
    let closed = { text: "", ms: 0 };
    const event = await oneEvent(tap, async () => void (closed = await intoTunnel(port, "POST /v1/messages HTTP/1.1\r\nhost: api.anthropic.com\r\n\r\n")));
    assert.match(closed.text, /^HTTP\/1\.1 400 [^]*carries TLS, and the client sent plain HTTP in it \(use an https:\/\/ URL\)/);
    assert.equal(event.reason, "plain-http");
    assert.equal(stub.requests.length, 0, "nothing was forwarded");
  });

  it("a client that does not trust the tap's CA is counted, and stderr says to set NODE_EXTRA_CA_CERTS", async () => {
    const event = await oneEvent(tap, async () => {
      const tunnel = await connectThrough(port, "api.anthropic.com:443");
      tunnel.socket.removeAllListeners("data");
      tunnel.socket.pause();
      const secure = tlsConnect({ socket: tunnel.socket, servername: "api.anthropic.com" }); // the system's roots only
      await new Promise<void>((resolve) => secure.once("error", () => resolve()).once("secureConnect", () => resolve()));
      assert.equal(secure.authorized, false);
      secure.destroy();
    });
    // OpenSSL and rustls clients send an alert; Bun's (Claude Code's) hangs up with none.
    assert.ok(["certificate-refused", "closed-in-handshake"].includes(String(event.reason)), JSON.stringify(event));
    const hint = tap.stderrLines.filter((l) => l.includes("the proxy's certificate"));
    assert.deepEqual(hint, [
      `sessiontap: a client ${
        event.reason === "certificate-refused" ? "refused" : "hung up on"
      } the proxy's certificate for api.anthropic.com, most likely because it does not trust the tap's CA: start it with NODE_EXTRA_CA_CERTS=${
        tap.proxy!.ca.certPath
      }`,
    ]);
  });

  it("a request inside the tunnel that cannot be read is a 400 and ends the connection; the next connection works", async () => {
    for (
      const [head, reason] of [["BROKEN\r\n\r\n", "bad-request"], [
        "POST /v1/messages HTTP/1.1\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n",
        "bad-request",
      ]]
    ) {
      let answer = "";
      const event = await oneEvent(tap, async () => {
        const socket = await tlsThrough(port, "api.anthropic.com", 443, ca);
        const incoming = new Incoming(socket);
        socket.write(head);
        answer = (await incoming.rest()).toString("utf8");
      });
      assert.match(answer, /^HTTP\/1\.1 400 /);
      assert.equal(event.reason, reason);
    }
    assert.equal(stub.requests.length, 0);
    const socket = await tlsThrough(port, "api.anthropic.com", 443, ca);
    sendRequest(socket, "GET", "/v1/models", { "x-api-key": "sk-test" });
    const answer = await readResponse(new Incoming(socket));
    socket.destroy();
    assert.equal(answer.status, 404, "the stub's own answer");
    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.equal(health.status, "ok", JSON.stringify(health.problems));
    assert.equal(health.internalErrors, 0);
    assert.equal(health.proxy.internalErrors, 0);
    assert.deepEqual(health.proxy.refused, { "bad-target": 5, "bad-head": 1, "head-too-large": 1, "not-connect": 1, "head-timeout": 1 });
    const { "certificate-refused": refused = 0, "closed-in-handshake": hungUp = 0, ...failed } = health.proxy.failed;
    assert.deepEqual(failed, { "handshake-timeout": 2, "handshake-failed": 1, "plain-http": 1, "bad-request": 2 });
    assert.equal(refused + hungUp, 1, "the client that did not trust the CA");
  });

  it("a request head inside the tunnel that stops part-way is a 408 within the bound, as in the CONNECT phase", async () => {
    let answer = "";
    const event = await oneEvent(tap, async () => {
      const socket = await tlsThrough(port, "api.anthropic.com", 443, ca);
      const incoming = new Incoming(socket);
      socket.write("POST /v1/messages HTTP/1.1\r\nhost: api.anthropic.com\r\n");
      answer = (await incoming.rest()).toString("utf8");
    });
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.equal(event.reason, "head-timeout");
  });
});

describe("who may use the proxy", { timeout: 60_000 }, () => {
  const TOKEN = "proxy-token-0123456789";
  let tap: ProxyTap;

  before(async () => {
    tap = await startProxyTap("http://127.0.0.1:9", [], { SESSIONTAP_TOKEN: TOKEN, SESSIONTAP_PROXY_TUNNEL: "off" });
  });

  after(() => tap?.close());

  it("with a token, a CONNECT without it, or with another, is a 407 asking for it", async () => {
    for (const auth of [null, `Basic ${btoa("sessiontap:guess-guess-guess")}`, "Bearer guess-guess-guess-guess", `Basic ${btoa(TOKEN)}`]) {
      const tunnel = await connectThrough(tap.proxyPort, "api.anthropic.com:443", auth === null ? {} : { "proxy-authorization": auth });
      assert.equal(tunnel.status, 407, String(auth));
      assert.equal(tunnel.headers["proxy-authenticate"], 'Basic realm="sessiontap"');
      assert.match(tunnel.text, /needs the tap's token: HTTPS_PROXY=http:\/\/sessiontap:<TOKEN>@HOST:PORT/);
      assert.ok(!tunnel.text.includes(TOKEN));
    }
  });

  it("the token as Basic credentials (any user name, as HTTPS_PROXY=http://user:TOKEN@… sends it) or as a Bearer token opens the tunnel", async () => {
    for (const auth of [`Basic ${btoa(`sessiontap:${TOKEN}`)}`, `Basic ${btoa(`anyone:${TOKEN}`)}`, `Bearer ${TOKEN}`]) {
      const tunnel = await connectThrough(tap.proxyPort, "api.anthropic.com:443", { "proxy-authorization": auth });
      assert.equal(tunnel.status, 200, auth);
      tunnel.socket.destroy();
    }
  });

  it("with tunnels off, a host the tap does not know is refused, and one shaped like a provider's but not covered is said once", async () => {
    const auth = { "proxy-authorization": `Bearer ${TOKEN}` };
    for (const target of ["example.com:443", "zz-mars9-aiplatform.googleapis.com:443", "zz-mars9-aiplatform.googleapis.com:443"]) {
      const tunnel = await connectThrough(tap.proxyPort, target, auth);
      assert.equal(tunnel.status, 403, target);
      assert.match(tunnel.text, /tunnels only the API hosts it knows \(SESSIONTAP_PROXY_TUNNEL=off\)/);
    }
    await tap.settled();
    const events = await pollUntil(() => proxyEvents(tap), (e) => e.filter((x) => x.reason === "tunnel-off").length === 3);
    assert.deepEqual(events.filter((e) => e.action === "proxy-uncovered"), [
      { ts: events.find((e) => e.action === "proxy-uncovered")!.ts, action: "proxy-uncovered", host: "zz-mars9-aiplatform.googleapis.com", provider: "vertex" },
    ]);
    assert.ok(!JSON.stringify(events).includes("example.com"), "an unknown host is never logged");
    const health = await (await fetch(`${tap.url}/_tap/health`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    assert.equal(health.proxy.uncovered, 2);
  });

  it("a known host is decrypted on 443 only: on any other port it is no upstream of its own, and with tunnels off it is refused like any host", async () => {
    const auth = { "proxy-authorization": `Bearer ${TOKEN}` };
    for (const port of [8443, 80, 9999]) {
      const tunnel = await connectThrough(tap.proxyPort, `api.anthropic.com:${port}`, auth);
      assert.equal(tunnel.status, 403, String(port));
      assert.match(tunnel.text, /tunnels only the API hosts it knows/);
    }
    const health = await (await fetch(`${tap.url}/_tap/health`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    assert.equal(health.proxy.terminated, 0);
    assert.deepEqual(health.proxy.upstreams, {});
  });
});

describe("wrong proxy tokens", { timeout: 60_000 }, () => {
  const TOKEN = "proxy-token-0123456789";
  let now = Date.now();
  let tap: ProxyTap;
  before(async () =>
    void (tap = await startProxyTap("http://127.0.0.1:9", [], { SESSIONTAP_TOKEN: TOKEN, SESSIONTAP_PROXY_TUNNEL: "off" }, { clock: () => now }))
  );
  after(() => tap?.close());

  it("are slowed after a few and counted with the HTTP port's, by the same throttle; the events log and stderr say so, never the guess", async () => {
    const guess = (i: number) => ({ "proxy-authorization": `Basic ${btoa(`sessiontap:guess-number-${i}-padding`)}` });
    for (let i = 0; i < TokenGate.FREE_FAILURES; i++) assert.equal((await connectThrough(tap.proxyPort, "api.anthropic.com:443", guess(i))).status, 407);
    const slowed = await connectThrough(tap.proxyPort, "api.anthropic.com:443", guess(99));
    assert.equal(slowed.status, 429);
    assert.ok(Number(slowed.headers["retry-after"]) >= 1, JSON.stringify(slowed.headers));
    assert.match(slowed.text, /too many wrong tokens from this client; try again in \d+ s/);
    const right = await connectThrough(tap.proxyPort, "api.anthropic.com:443", { "proxy-authorization": `Bearer ${TOKEN}` });
    assert.equal(right.status, 429, "no token is even read while the client waits");
    const api = await fetch(`${tap.url}/_tap/api/sessions`, { headers: { authorization: `Bearer ${TOKEN}` } });
    await api.body?.cancel();
    assert.equal(api.status, 429, "the HTTP port makes the same client wait");
    now += 60_000;
    const health = await (await fetch(`${tap.url}/_tap/health`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    assert.deepEqual(health.token, { failures: TokenGate.FREE_FAILURES, slowed: 3, clients: 1 });
    const after = await connectThrough(tap.proxyPort, "api.anthropic.com:443", { "proxy-authorization": `Bearer ${TOKEN}` });
    after.socket.destroy();
    assert.equal(after.status, 200, "after the wait");
    await tap.settled();
    const failures = await pollUntil(() => readEvents(tap.root).filter((e) => e.action === "token-failure"), (e) => e.length === TokenGate.FREE_FAILURES);
    assert.ok(failures.every((e) => e.peer === "127.0.0.1"), JSON.stringify(failures));
    assert.match(tap.stderrLines.join("\n"), /wrong tokens from 127\.0\.0\.1 \(5 so far\): it now waits 1 s before each try/);
    assert.doesNotMatch(JSON.stringify(readEvents(tap.root)) + tap.stderrLines.join("\n"), /guess-number/);
  });
});
