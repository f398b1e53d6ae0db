// No runtime's own wording reaches the user: a fetch that fails and a listen on a taken port, as the
// runtime running the tests raises them, are described in our words (describe(), which every error line
// and the 502 body use), and `serve` on a taken port names what holds it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe as describeError, networkFailure } from "../../src/utils/describe-error.ts";
import { listen } from "../../src/runtime/index.ts";
import { runTap, serveTap, stopAll, type TapChild } from "../support/child.ts";

/** What a runtime says to its own user, never to ours. */
const RUNTIME_WORDS = /Is the computer able|Failed to start server|Is port \d+ in use|verbose: true|os error \d+|client error \(/;

/** A loopback port free a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** The error `promise` rejects with. */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("it did not fail");
}

describe("failed connections, in our words", () => {
  let resetter: net.Server;
  let resetPort: number;
  before(async () => {
    resetter = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => resetter.listen(0, "127.0.0.1", resolve));
    resetPort = (resetter.address() as net.AddressInfo).port;
  });
  after(() => new Promise((resolve) => resetter.close(resolve)));

  it("a refused connection: 'connection refused', nothing of the runtime's advice", async () => {
    const said = describeError(await failure(fetch(`http://127.0.0.1:${await freePort()}/v1/messages`)));
    assert.match(said, /^connection refused( \(ECONNREFUSED\))?$/);
  });

  it("a connection reset before an answer: 'the connection was reset'", async () => {
    const said = describeError(await failure(fetch(`http://127.0.0.1:${resetPort}/`)));
    assert.match(said, /^the connection was reset( \(ECONNRESET\))?$/);
    assert.doesNotMatch(said, RUNTIME_WORDS);
  });

  it("a port another server holds: 'the address is already in use'", async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    try {
      const port = (holder.address() as net.AddressInfo).port;
      const error = await failure(listen(() => new Response("x"), { port, hostname: "127.0.0.1", onError: () => {}, cut: new AbortController() }));
      assert.match(describeError(error), /^the address is already in use( \(EADDRINUSE\))?$/);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it("each runtime's wording of the common failures maps to one phrase", () => {
    const cases: [string, string, string, string][] = [
      ["ECONNREFUSED", "TypeError", "ECONNREFUSED: Unable to connect. Is the computer able to access the url?", "connection refused"],
      [
        "",
        "Error",
        "error sending request for url (http://127.0.0.1:1/): client error (Connect): tcp connect error: Connection refused (os error 111)",
        "connection refused",
      ],
      ["ENOTFOUND", "TypeError", "getaddrinfo ENOTFOUND no-such-host.invalid", "no such host"],
      ["", "Error", "client error (Connect): dns error: failed to lookup address information: Name or service not known", "no such host"],
      ["", "Error", "error sending request: client error (Connect): tls handshake eof", "the TLS handshake failed"],
      ["EADDRINUSE", "Error", "Failed to start server. Is port 8787 in use?", "the address is already in use"],
      ["EADDRINUSE", "AddrInUse", "Address already in use (os error 98)", "the address is already in use"],
      ["", "TimeoutError", "The operation timed out.", "timed out"],
      ["EACCES", "Error", "EACCES: permission denied, open '/x'", ""],
    ];
    for (const [code, name, message, want] of cases) assert.equal(networkFailure(code, name, message) ?? "", want, message);
  });
});

describe("serve on a taken port names what holds it", () => {
  const taps: TapChild[] = [];
  after(() => stopAll(taps));

  it("a sessiontap of this user's (proven with the mirror root's key): 'already running', with its pid and version, and the line to use it; exit 2", async () => {
    const root = mkdtempSync(`${tmpdir()}/sessiontap-taken-`);
    try {
      const first = await serveTap(["--mirror-dir", root]);
      taps.push(first.tap);
      const r = await runTap(["serve", "--port", String(first.port), "--mirror-dir", root]);
      assert.equal(r.code, 2);
      assert.equal(
        r.stderr,
        `sessiontap: a sessiontap is already running on 127.0.0.1:${first.port} (pid ${first.tap.child.pid}, version ${
          /sessiontap (\S+)/.exec(first.tap.stdout())![1]
        }): use it (export ANTHROPIC_BASE_URL=${first.url}), or pick another port with --port\n`,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a sessiontap that cannot prove it is this user's (its mirror off): named as such, and never told to use; exit 2", async () => {
    const first = await serveTap(["--no-mirror"]);
    taps.push(first.tap);
    const r = await runTap(["serve", "--port", String(first.port), "--no-mirror"]);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      `sessiontap: port ${first.port} on 127.0.0.1 is held by something that could not prove it is this user's sessiontap ` +
        `(a tap proves itself with its mirror root's key, and the mirror is off here); pick another port with --port (or SESSIONTAP_PORT)\n`,
    );
  });

  it("anything else: 'port N is in use', and the setting that picks another; exit 2", async () => {
    const other: Server = createServer((_, res) => res.writeHead(404).end());
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const port = (other.address() as net.AddressInfo).port;
      const r = await runTap(["serve", "--port", String(port), "--no-mirror"]);
      assert.equal(r.code, 2);
      assert.equal(r.stderr, `sessiontap: port ${port} is in use on 127.0.0.1; pick another with --port (or SESSIONTAP_PORT)\n`);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});
