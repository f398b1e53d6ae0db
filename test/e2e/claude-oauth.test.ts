// The Anthropic API with an OAuth token (CLAUDE_CODE_OAUTH_TOKEN, what `claude setup-token` makes for a
// Claude subscription) instead of an API key, with the real Claude Code 2.1.328 and 2.1.332 (issue 22:
// "key and OAuth"). Claude Code then sends `Authorization: Bearer` and an OAuth beta, and no x-api-key.
// A session with a tool call is mirrored once; the token reaches the upstream as Claude Code made it and
// is in no file the tap writes; after Claude Code loses its transcript, `sessiontap restore` puts it back
// and `claude --resume` with the same token goes on with the whole history.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readdirSync, readFileSync, statSync } from "node:fs";
import type { StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";
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

/** A token in the shape `claude setup-token` prints; the stub accepts any. */
const OAUTH_TOKEN = "sk-ant-oat01-sessiontap-test-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ-AAAAAAAA";
const main = (recs: Rec[]) => recs.filter((r) => r.type === "user" || r.type === "assistant");
/** Every file under `dir`, recursively. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => (statSync(`${dir}/${name}`).isDirectory() ? filesUnder(`${dir}/${name}`) : [`${dir}/${name}`]));

for (const [version, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]]) {
  describe(`Claude Code ${version} with an OAuth token through the tap`, { timeout: 180_000 }, () => {
    let stub: StubUpstream;
    let tap: TestTap;
    let scratch: Scratch;
    let sessionId = "";
    let first: ClaudeRun;
    let resumed: ClaudeRun;
    let mirrored: Rec[] = [];
    let afterResume: Rec[] = [];
    let restoreRun = { code: 0, stdout: "", stderr: "" };
    let sentBeforeResume = 0;

    withTap((started) => ({ stub, tap } = started));
    before(async () => {
      scratch = makeScratch();
      const opts = { baseUrl: tap.url, scratch, bin, timeoutMs: 60_000, env: { ANTHROPIC_API_KEY: null, CLAUDE_CODE_OAUTH_TOKEN: OAUTH_TOKEN } };
      first = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash"], opts);
      assert.equal(first.code, 0, describeRun(first));
      sessionId = stub.requests.find((r) => r.headers["x-claude-code-session-id"] !== undefined)?.headers["x-claude-code-session-id"] ?? "";
      await tap.settled();
      mirrored = await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 2, 10_000);

      // Claude Code loses its transcript; the mirror brings it back.
      restoreRun = await loseAndRestore(scratch, sessionId, tap.root);
      sentBeforeResume = stub.requests.length;
      resumed = await runClaude(["-p", "--resume", sessionId, "a prompt after restore"], opts);
      await tap.settled();
      afterResume = await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 3, 10_000);
    });

    after(() => scratch?.cleanup());

    it("sends the token as a bearer credential, no API key, and gets the stub's answers through the tap", () => {
      assert.match(first.stdout.trim(), /^Done \(reply \d+\)\.$/, describeRun(first));
      const turns = stub.requests.filter((r) => r.url.split("?")[0] === "/v1/messages");
      assert.ok(turns.length >= 2, "the tool call and the answer after it");
      for (const r of turns) {
        assert.equal(r.headers.authorization, `Bearer ${OAUTH_TOKEN}`, "the token as Claude Code made it");
        assert.equal(r.headers["x-api-key"], undefined);
      }
    });

    it("mirrors the session once: the prompt, the tool call, its result and the answer", () => {
      const records = main(mirrored);
      assert.deepEqual(records.map((r) => r.type), ["user", "assistant", "user", "assistant"]);
      const text = JSON.stringify(records.map((r) => r.message.content));
      for (const s of ["RUNTOOL please", "tool_use", "hi-from-tool"]) assert.ok(text.includes(s), s);
      assert.ok(records.every((r) => r.sessionId === sessionId && r.reconstructed !== true));
      assert.equal(records[3].version, version, "the client's own version");
    });

    it("writes the token into no file of the mirror", () => {
      const holding = filesUnder(tap.root).filter((f) => readFileSync(f, "latin1").includes(OAUTH_TOKEN.slice(14)));
      assert.deepEqual(holding, []);
    });

    it("restore puts the lost transcript back, and claude --resume with the token sends the whole history, mirrored once", () => {
      assert.equal(restoreRun.code, 0, restoreRun.stderr);
      assert.equal(resumed.code, 0, describeRun(resumed));
      const sent = stub.requests.slice(sentBeforeResume).filter((r) => r.url.startsWith("/v1/messages") && r.headers["x-claude-code-session-id"] === sessionId);
      assert.ok(sent.length >= 1);
      const body = Buffer.from(sent.at(-1)!.body).toString("utf8");
      for (const s of ["RUNTOOL please", "hi-from-tool", "a prompt after restore"]) assert.ok(body.includes(s), s);
      const records = main(afterResume);
      assert.deepEqual(records.slice(0, 4).map((r) => r.uuid), main(mirrored).map((r) => r.uuid), "the first four records unchanged");
      assert.deepEqual(records.map((r) => r.type), ["user", "assistant", "user", "assistant", "user", "assistant"]);
    });
  });
}
