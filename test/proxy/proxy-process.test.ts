// Proxy mode in a real tap process (docs/DESIGN.md "Proxy mode"): listening beyond loopback it prints the
// proxy lines with the token it generated, asks every CONNECT for that token, forwards a terminated
// request to its upstream over TLS — here the loopback stub speaking HTTPS under a CA of the test's own,
// which the tap's fetch trusts through NODE_EXTRA_CA_CERTS as it would a gateway's — with the client's
// bytes unchanged, mirrors it, and stops cleanly on SIGTERM with a connection still open.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { spawnTap, type TapChild } from "../support/child.ts";
import { connectThrough, Incoming, readResponse, sendRequest, tlsThrough } from "../support/proxy-client.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords } from "../support/tap.ts";
import { makeServerCerts } from "../support/test-certs.ts";
import { pollUntil } from "../support/poll.ts";
import { signLikeClaudeCode, sigV4Problem } from "../support/sigv4.ts";

const BEDROCK = "bedrock-runtime.us-east-1.amazonaws.com";

describe("a tap process in proxy mode beyond loopback, forwarding over TLS", { timeout: 60_000 }, () => {
  let dir: string;
  let stub: StubUpstream;
  let tap: TapChild;
  let proxyPort = 0;
  let token = "";
  let ca = "";

  before(async () => {
    dir = mkdtempSync(`${tmpdir()}/sessiontap-proxy-`);
    const certs = await makeServerCerts();
    writeFileSync(`${dir}/upstream-ca.pem`, certs.caPem);
    stub = await startStub(0, certs);
    tap = spawnTap(["serve", "--port", "0", "--proxy-port", "0", "--host", "0.0.0.0", "--mirror-dir", `${dir}/mirror`], {
      env: {
        HOME: dir,
        SESSIONTAP_CA_DIR: `${dir}/ca`,
        SESSIONTAP_PROXY_UPSTREAM: `api.anthropic.com=${stub.url},${BEDROCK}=${stub.url}`,
        SESSIONTAP_PROXY_TUNNEL: "off",
        NODE_EXTRA_CA_CERTS: `${dir}/upstream-ca.pem`,
      },
    });
    const m = await tap.waitFor("stdout", /export HTTPS_PROXY=http:\/\/sessiontap:(\S+)@0\.0\.0\.0:(\d+)\n {2}export NODE_EXTRA_CA_CERTS=(\S+)\n/);
    [token, proxyPort] = [m[1], Number(m[2])];
    assert.equal(m[3], `${dir}/ca/ca.pem`);
    ca = readFileSync(m[3], "utf8");
  });

  after(async () => {
    if (tap.signal("SIGTERM")) await tap.exit(10_000).catch(() => tap.child.kill("SIGKILL"));
    await stub?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints the proxy, its CA and the two lines to export, the token among them", () => {
    const sent = `api.anthropic.com to ${stub.url}, ${BEDROCK} to ${stub.url} (SESSIONTAP_PROXY_UPSTREAM), the others to their own hosts`;
    const line =
      `  proxy      http://0.0.0.0:${proxyPort}  (CONNECT: decrypts api.anthropic.com, Vertex AI and Bedrock hosts; sends ${sent}; refuses other hosts)`;
    assert.ok(tap.stdout().split("\n").includes(line), tap.stdout());
    assert.match(tap.stdout(), new RegExp(`^ {2}proxy CA {3}${dir}/ca/ca\\.pem \\(made now\\)`, "m"));
    assert.ok(token.length >= 16);
  });

  it("a CONNECT without the token is a 407", async () => {
    const tunnel = await connectThrough(proxyPort, "api.anthropic.com:443");
    assert.equal(tunnel.status, 407);
  });

  it("with it, a request goes upstream over TLS with its bytes unchanged, and is mirrored", async () => {
    const socket = await tlsThrough(proxyPort, "api.anthropic.com", 443, ca, { "proxy-authorization": `Basic ${btoa(`sessiontap:${token}`)}` });
    const body = JSON.stringify({ model: "m", max_tokens: 5, stream: true, messages: [{ role: "user", content: "over TLS upstream" }] });
    sendRequest(
      socket,
      "POST",
      "/v1/messages",
      { "content-type": "application/json", "x-api-key": "sk-test", "x-claude-code-session-id": "tls-upstream" },
      body,
    );
    const answer = await readResponse(new Incoming(socket));
    assert.equal(answer.status, 200);
    assert.match(answer.body.toString("utf8"), /event: message_stop/);
    assert.equal(stub.requests.length, 1);
    assert.equal(Buffer.from(stub.requests[0].body).toString("utf8"), body);
    const records = await pollUntil(() => allRecords(`${dir}/mirror/tls-upstream`), (r) => r.length === 2, 10_000);
    assert.deepEqual(records.map((r) => r.type), ["user", "assistant"]);
    // The connection is left open: the stop below must not wait for it.
  });

  it("a Bedrock request signed with SigV4 goes upstream over TLS with its signature valid", async () => {
    const socket = await tlsThrough(proxyPort, BEDROCK, 443, ca, { "proxy-authorization": `Basic ${btoa(`sessiontap:${token}`)}` });
    const target = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke";
    const body = JSON.stringify({ anthropic_version: "bedrock-2023-05-31", max_tokens: 5, messages: [{ role: "user", content: "signed" }] });
    const headers = await signLikeClaudeCode("POST", BEDROCK, target, { "content-type": "application/json", "x-claude-code-session-id": "signed" }, body);
    sendRequest(socket, "POST", target, headers, body);
    const answer = await readResponse(new Incoming(socket));
    socket.destroy();
    assert.equal(answer.status, 404, "the stub knows no Bedrock path; the tap passed its answer on, refusing nothing");
    const got = stub.requests.at(-1)!;
    assert.equal(got.url, target);
    assert.equal(await sigV4Problem(got, BEDROCK), null);
  });

  it("SIGTERM stops it with a kept-alive proxy connection still open, exit 0", async () => {
    const started = Date.now();
    assert.equal(tap.signal("SIGTERM"), true);
    const exit = await tap.exit(15_000);
    assert.deepEqual(exit, { code: 0, signal: null }, tap.stderr());
    assert.ok(Date.now() - started < 5_000, `stopped in ${Date.now() - started} ms`);
    assert.match(tap.stderr(), /WARNING: listening on 0\.0\.0\.0/);
  });
});
