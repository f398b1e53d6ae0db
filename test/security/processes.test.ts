// The attack pass's reproductions against a real process: the tap run from source under the runtime running
// the tests, or the compiled binary when SESSIONTAP_BINARY is set (test/binary/security.test.ts runs this
// file that way). Raw sockets where a client library would tidy the request up; memory read from
// /proc/<pid>/status.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { runTap, serveTap, type TapChild } from "../support/child.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";

const MS = 60_000;

/** Sends `raw` on a fresh connection and reads until the server closes it (or `ms` pass); returns what came back. */
export function rawExchange(port: number, raw: string | Uint8Array, ms = 5000): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const socket = connect(port, "127.0.0.1", () => socket.write(raw));
    const timer = setTimeout(() => socket.destroy(), ms);
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

/** The status code of a raw HTTP answer (0 when none came). */
export const statusOf = (answer: string) => Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);

describe("odd requests to a real tap", () => {
  let stub: StubUpstream;
  let scratch: string;
  let tap: TapChild;
  let port: number;
  before(async () => {
    stub = await startStub();
    stub.setDefault({ kind: "json", status: 200, body: { data: [] } });
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-odd-`);
    ({ tap, port } = await serveTap(["--upstream", stub.url, "--mirror-dir", `${scratch}/mirror`], { env: { HOME: scratch } }));
  });
  after(async () => {
    tap?.signal("SIGTERM");
    await tap?.exit();
    await stub.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("an empty, malformed or missing Host is answered (forwarded, or 400) with no stack, path or query on stderr", { timeout: MS }, async () => {
    const cases: [string, string, number[]][] = [
      ["empty Host", "GET /v1/models?key=QSECRET1 HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n", [200]],
      ["HTTP/1.0 without Host", "GET /v1/models?key=QSECRET2 HTTP/1.0\r\n\r\n", [200]],
      ["HTTP/1.0 health without Host", "GET /_tap/health?key=QSECRET3 HTTP/1.0\r\n\r\n", [200]],
      ["a space in Host", "GET /v1/models?key=QSECRET4 HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n", [400]],
      ["an unclosed bracket", "GET /v1/models?key=QSECRET5 HTTP/1.1\r\nHost: [::1\r\nConnection: close\r\n\r\n", [400]],
      ["a port beyond 65535", "GET /v1/models?key=QSECRET6 HTTP/1.1\r\nHost: x:99999\r\nConnection: close\r\n\r\n", [400]],
      ["a path in Host", "GET /models?key=QSECRET7 HTTP/1.1\r\nHost: x/v1\r\nConnection: close\r\n\r\n", [400]],
      ["userinfo in Host", "GET /v1/models?key=QSECRET8 HTTP/1.1\r\nHost: user@x\r\nConnection: close\r\n\r\n", [400]],
      ["percent signs in Host", "GET /v1/models?key=QSECRET9 HTTP/1.1\r\nHost: %%%\r\nConnection: close\r\n\r\n", [400]],
      ["HTTP/1.0 POST without Host", "POST /v1/messages/count_tokens?key=QSECRET10 HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", [200]],
    ];
    const before = stub.requests.length;
    for (const [what, raw, allowed] of cases) {
      const answer = await rawExchange(port, raw);
      assert.ok(allowed.includes(statusOf(answer)), `${what}: ${JSON.stringify(answer.slice(0, 200))}`);
    }
    const forwarded = stub.requests.slice(before).map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(forwarded, ["GET /v1/models?key=QSECRET1", "GET /v1/models?key=QSECRET2", "POST /v1/messages/count_tokens?key=QSECRET10"], "forwarded to the upstream's path, nothing else");
    assert.equal((await fetch(`http://127.0.0.1:${port}/_tap/health`)).status, 200, "the tap is still up");
    const stderr = tap.stderr();
    assert.doesNotMatch(stderr, /QSECRET|\/v1\/models|\/_tap\/health/, stderr);
    assert.doesNotMatch(stderr, /^\s+at |\d+ \| /m, "no stack, no source");
    assert.doesNotMatch(stderr, /internal error/, stderr);
  });
});

describe("a mirror root open to others stops serve", () => {
  it("root 0777: exit 2, one line naming the root and its setting", { timeout: MS }, async () => {
    const scratch = mkdtempSync(`${tmpdir()}/sessiontap-open-root-`);
    try {
      const root = `${scratch}/mirror`;
      mkdirSync(root);
      chmodSync(root, 0o777);
      const r = await runTap(["serve", "--port", "0", "--mirror-dir", root], { env: { HOME: scratch } });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`^sessiontap: cannot mirror to ${root} \\(set by --mirror-dir\\): ${root} is writable by other users \\(mode 777\\).*chmod 700 ${root}\\n$`));
      assert.equal(r.stdout, "", "it never listened");
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
