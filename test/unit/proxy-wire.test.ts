// The proxy's pure rules and its HTTP/1.1 reading (docs/DESIGN.md "Proxy mode"): which hosts it terminates,
// which CONNECT targets and request heads it accepts, how a body is framed, which Proxy-Authorization opens
// it, and its settings. Bodies are read from a real stream split at every byte boundary, as a TLS socket
// may deliver them.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { PassThrough } from "node:stream";
import { parseConfig } from "../../src/config/parse.ts";
import { hostTable } from "../../src/config/proxy-settings.ts";
import { bodyStream, framingOf, keepsAlive, parseAuthority, parseRequestHead, readHead, type RequestHead, SocketReader } from "../../src/proxy/http1.ts";
import { proxyToken } from "../../src/proxy/proxy-server.ts";
import { sameSecret } from "../../src/protocol/session-id.ts";

const head = (text: string) => parseRequestHead(text) as RequestHead;

describe("the known hosts", () => {
  const table = hostTable(["gateway.example.com"]);
  it("terminates the API hosts, by provider", () => {
    assert.deepEqual(table.recognise("api.anthropic.com"), { kind: "terminate", provider: "anthropic" });
    assert.deepEqual(table.recognise("API.Anthropic.COM"), { kind: "terminate", provider: "anthropic" });
    assert.deepEqual(table.recognise("us-east5-aiplatform.googleapis.com"), { kind: "terminate", provider: "vertex" });
    assert.deepEqual(table.recognise("aiplatform.googleapis.com"), { kind: "terminate", provider: "vertex" });
    assert.deepEqual(table.recognise("bedrock-runtime.eu-west-1.amazonaws.com"), { kind: "terminate", provider: "bedrock" });
    assert.deepEqual(table.recognise("gateway.example.com"), { kind: "terminate", provider: "anthropic" });
  });
  it("a host shaped like a provider's that the CA does not name is uncovered; every other host unknown", () => {
    assert.deepEqual(table.recognise("mars-north9-aiplatform.googleapis.com"), { kind: "uncovered", provider: "vertex" });
    assert.deepEqual(table.recognise("bedrock-runtime.mars-1.amazonaws.com"), { kind: "uncovered", provider: "bedrock" });
    for (
      const host of [
        "anthropic.com",
        "evil-api.anthropic.com",
        "api.anthropic.com.evil.example",
        "oauth2.googleapis.com",
        "bedrock.us-east-1.amazonaws.com",
        "s3.amazonaws.com",
      ]
    ) {
      assert.deepEqual(table.recognise(host), { kind: "unknown" }, host);
    }
  });
  it("every name the CA is constrained to is one it terminates", () => {
    const names = table.names();
    assert.ok(names.length > 70);
    for (const name of names) assert.equal(table.terminates(name), true, name);
  });
});

describe("CONNECT targets and request heads", () => {
  it("a target is host:port: a name, an IPv4 address or a bracketed IPv6 one, a port 1-65535", () => {
    assert.deepEqual(parseAuthority("api.anthropic.com:443"), { host: "api.anthropic.com", port: 443 });
    assert.deepEqual(parseAuthority("127.0.0.1:8443"), { host: "127.0.0.1", port: 8443 });
    assert.deepEqual(parseAuthority("[::1]:443"), { host: "::1", port: 443 });
    for (
      const bad of [
        "api.anthropic.com",
        "api.anthropic.com:0",
        "api.anthropic.com:65536",
        ":443",
        "a b:443",
        "[::1:443",
        "::1:443",
        "x_y.com:443",
        "u@h:443",
        "h:443/x",
        "-h.com:443",
      ]
    ) {
      assert.equal(parseAuthority(bad), null, bad);
    }
  });
  it("a head is read strictly: no folded line, no name that is not a token, no control character", () => {
    assert.deepEqual(head("CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\nX-A:  b \r\n\r\n"), {
      method: "CONNECT",
      target: "api.anthropic.com:443",
      version: "1.1",
      fields: [["host", "api.anthropic.com:443"], ["x-a", "b"]],
    });
    for (
      const bad of [
        "GET /\r\n\r\n",
        "GET / HTTP/2\r\n\r\n",
        "GET / HTTP/1.1\r\nx: a\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\r\nx y: a\r\n\r\n",
        "GET / HTTP/1.1\r\nx: a\x00b\r\n\r\n",
      ]
    ) {
      assert.equal(typeof parseRequestHead(bad), "string", JSON.stringify(bad));
    }
  });
  it("HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 only when told to keep it", () => {
    assert.equal(keepsAlive(head("GET / HTTP/1.1\r\n\r\n")), true);
    assert.equal(keepsAlive(head("GET / HTTP/1.1\r\nconnection: Close\r\n\r\n")), false);
    assert.equal(keepsAlive(head("GET / HTTP/1.0\r\n\r\n")), false);
    assert.equal(keepsAlive(head("GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n")), true);
  });
  it("a head past its bound, or cut off, is refused", async () => {
    const stream = new PassThrough();
    stream.end(`GET / HTTP/1.1\r\nx: ${"a".repeat(100)}\r\n\r\n`);
    await assert.rejects(readHead(new SocketReader(stream), 64, 1000, 1000), /larger than 64 bytes/);
    const cut = new PassThrough();
    cut.end("GET / HTTP/1.1\r\nx: a\r\n");
    await assert.rejects(readHead(new SocketReader(cut), 1024, 1000, 1000), /ended inside a request head/);
  });
});

describe("request bodies", () => {
  it("framing: a length, chunked, or none; conflicting or unknown framing refused", () => {
    assert.deepEqual(framingOf(head("POST / HTTP/1.1\r\ncontent-length: 12\r\n\r\n")), { kind: "sized", length: 12 });
    assert.deepEqual(framingOf(head("POST / HTTP/1.1\r\ncontent-length: 12\r\ncontent-length: 12\r\n\r\n")), { kind: "sized", length: 12 });
    assert.deepEqual(framingOf(head("POST / HTTP/1.1\r\ntransfer-encoding: Chunked\r\n\r\n")), { kind: "chunked" });
    assert.deepEqual(framingOf(head("POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n")), { kind: "none" });
    assert.deepEqual(framingOf(head("GET / HTTP/1.1\r\n\r\n")), { kind: "none" });
    for (
      const bad of [
        "content-length: 1\r\ntransfer-encoding: chunked",
        "content-length: 1\r\ncontent-length: 2",
        "content-length: -1",
        "content-length: 1e3",
        "transfer-encoding: gzip, chunked",
      ]
    ) {
      assert.equal(typeof framingOf(head(`POST / HTTP/1.1\r\n${bad}\r\n\r\n`)), "string", bad);
    }
  });

  const read = async (stream: ReadableStream<Uint8Array>) => Buffer.from(await new Response(stream).arrayBuffer()).toString("utf8");
  const wire = "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: t\r\n\r\nNEXT";

  it("a chunked body is decoded whole, wherever the stream splits it, and what follows it is left for the next request", async () => {
    for (let cut = 1; cut < wire.length; cut++) {
      const socket = new PassThrough();
      const reader = new SocketReader(socket);
      socket.write(wire.slice(0, cut));
      socket.end(wire.slice(cut));
      let done = false;
      assert.equal(await read(bodyStream(reader, { kind: "chunked" }, 1000, () => (done = true))), "hello, world", `cut at ${cut}`);
      assert.equal(done, true);
      let rest = "";
      for (let chunk = await reader.read(1000); chunk !== null; chunk = await reader.read(1000)) rest += Buffer.from(chunk).toString("utf8");
      assert.equal(rest, "NEXT", `cut at ${cut}`);
    }
  });

  it("a sized body is read to its length and no further; one that ends short errors", async () => {
    const socket = new PassThrough();
    socket.end("abcdefNEXT");
    const reader = new SocketReader(socket);
    assert.equal(await read(bodyStream(reader, { kind: "sized", length: 6 }, 1000, () => {})), "abcdef");
    assert.equal(Buffer.from((await reader.read(1000))!).toString("utf8"), "NEXT");
    const short = new PassThrough();
    short.end("abc");
    await assert.rejects(read(bodyStream(new SocketReader(short), { kind: "sized", length: 6 }, 1000, () => {})), /ended 3 bytes short/);
    const badChunk = new PassThrough();
    badChunk.end("zz\r\nhello\r\n0\r\n\r\n");
    await assert.rejects(read(bodyStream(new SocketReader(badChunk), { kind: "chunked" }, 1000, () => {})), /chunk size is not hexadecimal/);
  });
});

describe("who may use the proxy, and its settings", () => {
  const TOKEN = "a-token-of-the-tap-0123";
  it("the token as Basic credentials (any user) or Bearer opens it; anything else does not", () => {
    const proxyAuthorized = (header: string | null, token: string) => sameSecret(proxyToken(header), token);
    assert.equal(proxyAuthorized(`Basic ${btoa(`sessiontap:${TOKEN}`)}`, TOKEN), true);
    assert.equal(proxyAuthorized(`basic ${btoa(`x:${TOKEN}`)}`, TOKEN), true);
    assert.equal(proxyAuthorized(`Bearer ${TOKEN}`, TOKEN), true);
    for (const bad of [null, "", `Basic ${btoa(TOKEN)}`, `Basic ${btoa(`sessiontap:${TOKEN}x`)}`, `Bearer ${TOKEN.slice(1)}`, "Basic !!!", `Digest ${TOKEN}`]) {
      assert.equal(proxyAuthorized(bad, TOKEN), false, String(bad));
    }
  });

  it("is off unless a proxy port is set; then its settings are read, and a bad one is a usage error naming it", () => {
    assert.equal(parseConfig(["serve"], {}, "/home/u").proxy, null);
    const on = parseConfig(["serve", "--proxy-port", "0"], {
      SESSIONTAP_PROXY_HOSTS: "Gateway.Example.com, other.example",
      SESSIONTAP_PROXY_UPSTREAM: "api.anthropic.com=http://127.0.0.1:9/base/",
    }, "/home/u").proxy;
    assert.deepEqual(on, {
      port: 0,
      addedHosts: ["gateway.example.com", "other.example"],
      upstreams: { "api.anthropic.com": "http://127.0.0.1:9/base" },
      caDir: "/home/u/.config/sessiontap",
      timeoutMs: 10000,
      tunnel: true,
    });
    assert.equal(parseConfig(["serve"], { SESSIONTAP_PROXY_PORT: "8788", XDG_CONFIG_HOME: "/xdg" }, "/home/u").proxy?.caDir, "/xdg/sessiontap");
    assert.equal(parseConfig(["serve"], { SESSIONTAP_PROXY_PORT: "8788", SESSIONTAP_CA_DIR: "~/ca" }, "/home/u").proxy?.caDir, "/home/u/ca");
    const bad: [Record<string, string>, RegExp][] = [
      [{ SESSIONTAP_PROXY_PORT: "x" }, /proxy port \(--proxy-port \/ SESSIONTAP_PROXY_PORT\) must be a whole number/],
      [{ SESSIONTAP_PROXY_PORT: "1", SESSIONTAP_PROXY_HOSTS: "*.example.com" }, /SESSIONTAP_PROXY_HOSTS takes host names/],
      [{ SESSIONTAP_PROXY_PORT: "1", SESSIONTAP_PROXY_HOSTS: "gateway.example.com,com" }, /SESSIONTAP_PROXY_HOSTS: com is wider than one site/],
      [{ SESSIONTAP_PROXY_PORT: "1", SESSIONTAP_PROXY_UPSTREAM: "api.anthropic.com" }, /SESSIONTAP_PROXY_UPSTREAM takes HOST=URL pairs/],
      [{ SESSIONTAP_PROXY_PORT: "1", SESSIONTAP_PROXY_UPSTREAM: "api.anthropic.com=ftp://x" }, /must be an http\(s\) URL/],
      [{ SESSIONTAP_PROXY_PORT: "1", SESSIONTAP_PROXY_UPSTREAM: "api.anthropic.com=http://u:p@x" }, /must not carry credentials/],
      [{ SESSIONTAP_PROXY_PORT: "1", SESSIONTAP_PROXY_TUNNEL: "maybe" }, /SESSIONTAP_PROXY_TUNNEL must be on or off/],
      [{ SESSIONTAP_PROXY_PORT: "1", SESSIONTAP_PROXY_TIMEOUT_MS: "5" }, /SESSIONTAP_PROXY_TIMEOUT_MS must be between 100 and 600000/],
    ];
    for (const [env, message] of bad) assert.throws(() => parseConfig(["serve"], env, "/home/u"), message, JSON.stringify(env));
  });

  it("a host the proxy adds names one site: never a top-level domain, a country's shared suffix, or a domain above the API's hosts", () => {
    const hosts = (list: string) => parseConfig(["serve"], { SESSIONTAP_PROXY_PORT: "1", SESSIONTAP_PROXY_HOSTS: list }, "/home/u").proxy?.addedHosts;
    for (const wide of ["com", "internal", "co.uk", "com.au", "ac.jp", "googleapis.com", "amazonaws.com", "anthropic.com", "us-east-1.amazonaws.com"]) {
      assert.throws(() => hosts(wide), new RegExp(`SESSIONTAP_PROXY_HOSTS: ${wide.replace(/\./g, "\\.")} is wider than one site`), wide);
    }
    const sites = ["gateway.example.com", "example.com", "llm.corp.example", "openrouter.ai", "api.x.ai", "gw.example.co.uk", "example.de"];
    assert.deepEqual(hosts(sites.join(",")), sites);
  });
});
