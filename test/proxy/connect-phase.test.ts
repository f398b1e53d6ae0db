// The proxy's CONNECT phase is bounded (docs/DESIGN.md "Proxy mode"): a head dripped a byte at a time gets its 408 within the
// bound, however short each gap; connections still in that phase are capped, so under a small descriptor limit (prlimit
// --nofile) the tap's API and health keep answering while hundreds of them wait; and no tunnel leads into the tap itself,
// its HTTP port or its proxy port, by any loopback name. Raw sockets, an in-process tap and a tap process.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { spawnTap, type TapChild } from "../support/child.ts";
import { connectThrough, Incoming } from "../support/proxy-client.ts";
import { type ProxyTap, startProxyTap } from "../support/proxy-tap.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { pollUntil, within } from "../support/poll.ts";

const TIMEOUT_MS = 400;
const HEAD = "CONNECT api.anthropic.com:443 HTTP/1.1\r\nhost: api.anthropic.com:443\r\n\r\n";

describe("the CONNECT phase", { timeout: 60_000 }, () => {
  let tap: ProxyTap;
  before(async () => void (tap = await startProxyTap("http://127.0.0.1:9", [], { SESSIONTAP_PROXY_TIMEOUT_MS: String(TIMEOUT_MS) })));
  after(() => tap?.close());

  it("a head dripped a byte at a time, each gap well inside the bound, is answered 408 before it could end", { timeout: 20_000 }, async () => {
    const socket = netConnect({ host: "127.0.0.1", port: tap.proxyPort });
    const incoming = new Incoming(socket);
    await new Promise((resolve) => socket.once("connect", resolve));
    let sent = 0;
    const drip = setInterval(() => (incoming.closed || sent === HEAD.length ? clearInterval(drip) : socket.write(HEAD[sent++])), TIMEOUT_MS / 4);
    const answer = (await incoming.rest(10_000)).toString("utf8");
    clearInterval(drip);
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.ok(sent < HEAD.length, `closed after ${sent} of ${HEAD.length} bytes`);
  });

  it("no tunnel leads into the tap: its HTTP port and its proxy port, by any loopback name or address, are refused", async () => {
    const httpPort = Number(new URL(tap.url).port);
    const before = (await (await fetch(`${tap.url}/_tap/health`)).json()).proxy.refused.self ?? 0;
    const targets = [
      `127.0.0.1:${httpPort}`,
      `localhost:${httpPort}`,
      `127.0.0.2:${httpPort}`,
      `0.0.0.0:${httpPort}`,
      `[::ffff:127.0.0.1]:${httpPort}`,
      `127.0.0.1:${tap.proxyPort}`,
      `localhost:${tap.proxyPort}`,
      `[::1]:${tap.proxyPort}`,
    ];
    for (const target of targets) {
      const tunnel = await connectThrough(tap.proxyPort, target);
      assert.equal(tunnel.status, 403, target);
      assert.match(tunnel.text, /leads into the tap itself/);
    }
    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.equal(health.proxy.refused.self, before + targets.length);
    assert.equal(health.proxy.tunnels, 0);
  });
});

describe("connections in their CONNECT phase, under a small descriptor limit", { timeout: 90_000 }, () => {
  const LIMIT = 256;
  const CLIENTS = 300;
  let dir: string;
  let stub: StubUpstream;
  let tap: TapChild;
  let url = "";
  let proxyPort = 0;
  const sockets: Socket[] = [];

  before(async () => {
    dir = mkdtempSync(`${tmpdir()}/sessiontap-fds-`);
    stub = await startStub();
    tap = spawnTap(["serve", "--port", "0", "--proxy-port", "0", "--upstream", stub.url, "--mirror-dir", `${dir}/mirror`], {
      env: { HOME: dir, SESSIONTAP_CA_DIR: `${dir}/ca`, SESSIONTAP_PROXY_TIMEOUT_MS: "60000" },
    });
    const m = await tap.waitFor("stdout", /listening {2}(http:\/\/\S+)[^]*export HTTPS_PROXY=http:\/\/127\.0\.0\.1:(\d+)\n/);
    [url, proxyPort] = [m[1], Number(m[2])];
    const limited = spawnSync("prlimit", ["--pid", String(tap.child.pid), `--nofile=${LIMIT}:${LIMIT}`], { encoding: "utf8" });
    assert.equal(limited.status, 0, limited.stderr);
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    if (tap.signal("SIGTERM")) await tap.exit(10_000).catch(() => tap.child.kill("SIGKILL"));
    await stub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    `${CLIENTS} clients that send half a CONNECT and wait: the surplus is refused at once, and the API and health still answer`,
    { timeout: 60_000 },
    async () => {
      const answers: string[] = [];
      for (let i = 0; i < CLIENTS; i++) {
        const socket = netConnect({ host: "127.0.0.1", port: proxyPort });
        socket.on("error", () => undefined);
        socket.once("connect", () => socket.write("CONNECT api.anthropic.com:443 HTTP/1.1\r\n"));
        const incoming = new Incoming(socket);
        incoming.rest(60_000).then((bytes) => answers.push(bytes.toString("utf8")), () => undefined);
        sockets.push(socket);
      }
      // Only those over the cap are answered (the rest wait out the bound): the answer names the cap.
      const first = await pollUntil(() => answers, (a) => a.length > 0, 20_000, "a client refused");
      const cap = Number(/^HTTP\/1\.1 503 [^]*: (\d+) connections are still in their CONNECT phase/.exec(first[0])?.[1]);
      assert.ok(cap > 0 && cap < LIMIT / 2, first[0]);
      await pollUntil(() => answers, (a) => a.length === CLIENTS - cap, 20_000, "the surplus refused");
      const health = await within(fetch(`${url}/_tap/health`).then((r) => r.json()), 5_000, "health");
      assert.equal(health.proxy.refused.busy, CLIENTS - cap);
      const api = await within(
        fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-claude-code-session-id": "under-limit" },
          body: JSON.stringify({ model: "m", max_tokens: 5, stream: true, messages: [{ role: "user", content: "still here?" }] }),
        }).then(async (r) => ({ status: r.status, text: await r.text() })),
        5_000,
        "the API",
      );
      assert.equal(api.status, 200);
      assert.match(api.text, /event: message_stop/);
    },
  );
});
