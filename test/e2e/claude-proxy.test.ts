// Proxy mode with the real Claude Code (docs/DESIGN.md "Proxy mode"), 2.1.328 and 2.1.332: no
// ANTHROPIC_BASE_URL at all, only HTTPS_PROXY at the tap's proxy and NODE_EXTRA_CA_CERTS at its CA, as the
// startup block says. Claude Code then talks to api.anthropic.com itself, through the tap, which terminates
// that TLS and (SESSIONTAP_PROXY_UPSTREAM) sends the requests to the loopback stub; tunnels are off, so no
// other host is reached from this machine. A session with a tool call is mirrored once; after Claude Code
// loses its transcript, `sessiontap restore` puts it back and `claude --resume` through the proxy goes on
// with the whole history. Runs unchanged under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { type ProxyTap, startProxyTap } from "../support/proxy-tap.ts";
import {
  CLAUDE_BIN,
  CLAUDE_NEXT_BIN,
  type ClaudeRun,
  describeRun,
  makeScratch,
  pollUntil,
  type Rec,
  runClaude,
  type Scratch,
  sessionMirror,
} from "../support/claude.ts";
import { loseAndRestore } from "../support/recover.ts";

const main = (recs: Rec[]) => recs.filter((r) => r.type === "user" || r.type === "assistant");

for (const [version, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]]) {
  describe(`Claude Code ${version} through the tap's proxy, with no ANTHROPIC_BASE_URL`, { timeout: 180_000 }, () => {
    let stub: StubUpstream;
    let tap: ProxyTap;
    let scratch: Scratch;
    let sessionId = "";
    let first: ClaudeRun;
    let resumed: ClaudeRun;
    let mirrored: Rec[] = [];
    let afterResume: Rec[] = [];
    let restoreRun = { code: 0, stdout: "", stderr: "" };
    let sentBeforeResume = 0;
    // deno-lint-ignore no-explicit-any
    let proxy: any;

    before(async () => {
      stub = await startStub();
      tap = await startProxyTap(stub.url, ["api.anthropic.com"], { SESSIONTAP_PROXY_TUNNEL: "off" });
      scratch = makeScratch();
      const opts = {
        baseUrl: "unused",
        scratch,
        bin,
        timeoutMs: 60_000,
        env: { ANTHROPIC_BASE_URL: null, HTTPS_PROXY: `http://127.0.0.1:${tap.proxy!.port}`, NODE_EXTRA_CA_CERTS: tap.proxy!.ca.certPath },
      };
      first = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash"], opts);
      assert.equal(first.code, 0, describeRun(first));
      sessionId = stub.requests.find((r) => r.headers["x-claude-code-session-id"] !== undefined)?.headers["x-claude-code-session-id"] ?? "";
      mirrored = await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 2, 10_000);

      // Claude Code loses its transcript; the mirror brings it back.
      restoreRun = await loseAndRestore(scratch, sessionId, tap.root);
      sentBeforeResume = stub.requests.length;
      resumed = await runClaude(["-p", "--resume", sessionId, "a prompt after restore"], opts);
      afterResume = await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 3, 10_000);
      proxy = (await (await fetch(`${tap.url}/_tap/health`)).json()).proxy;
    });

    after(async () => {
      await tap?.close();
      await stub?.close();
      scratch?.cleanup();
    });

    it("answers with the tool call done, every request having come through the proxy", () => {
      assert.match(first.stdout.trim(), /^Done \(reply \d+\)\.$/, describeRun(first));
      assert.ok(sessionId !== "", "the session header");
      assert.ok(stub.requests.some((r) => r.url.startsWith("/v1/messages")));
      assert.equal(proxy.forwarded.anthropic, stub.requests.length, "the stub saw nothing that did not come through the proxy");
      assert.ok(proxy.terminated >= 1);
      assert.equal(proxy.refused["tunnel-off"] ?? 0, 0, `Claude Code asked for no other host: ${JSON.stringify(proxy.refused)}`);
      assert.deepEqual(proxy.failed, {}, "no handshake failed: the CA was trusted through NODE_EXTRA_CA_CERTS");
    });

    it("mirrors the session once: the prompt, the tool call, its result and the answer", () => {
      const records = main(mirrored);
      assert.deepEqual(records.map((r) => r.type), ["user", "assistant", "user", "assistant"]);
      const text = JSON.stringify(records.map((r) => r.message.content));
      for (const s of ["RUNTOOL please", "tool_use", "hi-from-tool"]) assert.ok(text.includes(s), s);
      assert.ok(records.every((r) => r.sessionId === sessionId && r.reconstructed !== true));
      assert.equal(records[3].version, version, "the client's own version");
    });

    it("restore puts the lost transcript back, and claude --resume through the proxy sends the whole history", () => {
      assert.equal(restoreRun.code, 0, restoreRun.stderr);
      assert.equal(resumed.code, 0, describeRun(resumed));
      assert.match(resumed.stdout.trim(), /^Done \(reply \d+\)\.$/);
      const resumedBodies = stub.requests.slice(sentBeforeResume).filter((r) =>
        r.url.startsWith("/v1/messages") && r.headers["x-claude-code-session-id"] === sessionId
      );
      assert.ok(resumedBodies.length >= 1);
      const body = Buffer.from(resumedBodies.at(-1)!.body).toString("utf8");
      for (const s of ["RUNTOOL please", "hi-from-tool", "a prompt after restore"]) assert.ok(body.includes(s), s);
    });

    it("the mirror still holds every message once after the resumed turn", () => {
      const records = main(afterResume);
      assert.deepEqual(records.slice(0, 4).map((r) => r.uuid), main(mirrored).map((r) => r.uuid), "the first four records unchanged");
      assert.deepEqual(records.map((r) => r.type), ["user", "assistant", "user", "assistant", "user", "assistant"]);
      assert.equal(records.filter((r) => r.reconstructed === true).length, 0);
    });
  });
}
