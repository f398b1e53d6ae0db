// The real Claude Code (2.1.328 and 2.1.332) on AWS Bedrock through a tap when the event stream breaks
// (docs/DESIGN.md "Bedrock's event stream"): a frame with a wrong checksum, one with a wrong length, a
// stream that ends inside a frame, and an exception frame; and message_stop's frame, after message_delta, broken or cut. The client reads what the upstream sent, gives up
// on the stream and asks again without streaming (the stub's log shows it); the tap logs the broken frame
// once, keeps the cut answer as interrupted, never as whole, and mirrors the retry's answer once. And with
// Claude Code signing its requests itself (no CLAUDE_CODE_SKIP_BEDROCK_AUTH), the tap refuses them with
// the line that names proxy mode, which Claude Code shows the user (docs/DESIGN.md "Bedrock's signatures").
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type BedrockFault, type ProviderStub, startProviderStub } from "../support/provider-stub.ts";
import { readEvents, startTestTap, type TestTap } from "../support/tap.ts";
import { CLAUDE_BIN, CLAUDE_NEXT_BIN, describeRun, makeScratch, pollUntil, runClaude, type Scratch, sessionMirror } from "../support/claude.ts";

const BEDROCK = (tap: string) => ({
  CLAUDE_CODE_USE_BEDROCK: "1",
  ANTHROPIC_BEDROCK_BASE_URL: tap,
  AWS_REGION: "us-east-1",
  CLAUDE_CODE_SKIP_BEDROCK_AUTH: "1",
  ANTHROPIC_BASE_URL: "",
  ANTHROPIC_API_KEY: "",
});
// Frame 3 is within the answer; the last frame is message_stop's, after message_delta carried the stop_reason.
const LAST = Number.MAX_SAFE_INTEGER;
const FAULTS: (BedrockFault & { line: RegExp | null })[] = [
  { kind: "bad-crc", at: 2, line: /^frame 3 does not decode \(.*checksum/ },
  { kind: "bad-length", at: 2, line: /^frame 3 does not decode/ },
  { kind: "cut", at: 2, line: /^the stream ended inside a frame/ },
  { kind: "exception", at: 2, line: null },
  { kind: "bad-crc", at: LAST, line: /^frame \d+ does not decode \(.*checksum/ },
  { kind: "cut", at: LAST, line: /^the stream ended inside a frame/ },
];

for (const [version, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]] as const) {
  describe(`Claude Code ${version} on Bedrock when the event stream breaks`, { timeout: 180_000 }, () => {
    let stub: ProviderStub;
    let tap: TestTap;
    const scratches: Scratch[] = [];

    before(async () => {
      stub = await startProviderStub();
      tap = await startTestTap(stub.url);
    });

    after(async () => {
      await tap?.close();
      await stub?.close();
      for (const s of scratches) s.cleanup();
    });

    for (const fault of FAULTS) {
      const last = fault.at === LAST;
      // Within the answer, Claude Code gives the stream up and asks again without streaming. At message_stop it has every block:
      // it writes "API Error: …" to its transcript, runs the tool and goes on, so the mirror keeps that answer whole but interrupted.
      const expected = last
        ? { turns: ["invoke-with-response-stream", "invoke-with-response-stream"], answers: ["interrupted", "end_turn"] }
        : { turns: ["invoke-with-response-stream", "invoke", "invoke-with-response-stream"], answers: ["interrupted", "tool_use", "end_turn"] };
      it(`${fault.kind} at ${last ? "message_stop's frame" : `frame ${fault.at + 1}`}: one events-log line; the cut answer interrupted, never whole`, async () => {
        const scratch = makeScratch();
        scratches.push(scratch);
        const from = stub.requests.length;
        const events = readEvents(tap.root).length;
        stub.faults.push({ kind: fault.kind, at: fault.at });
        const run = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash"], { baseUrl: tap.url, scratch, bin, env: BEDROCK(tap.url) });
        assert.equal(run.code, 0, describeRun(run));
        assert.equal(run.stdout.trim(), `Done (reply ${stub.inner.requests.length}).`, describeRun(run));
        const turns = stub.requests.slice(from).filter((r) => r.url.startsWith("/model/")).map((r) => r.url.split("/").at(-1));
        assert.deepEqual(turns, expected.turns, "the broken stream, the fallback where Claude Code takes one, the next turn");
        const session = stub.requests.slice(from).find((r) => r.url.startsWith("/model/"))!.headers["x-claude-code-session-id"];
        const records = await pollUntil(
          () => sessionMirror(tap.root, session),
          (r) => r.filter((x) => x.type === "assistant").length >= expected.answers.length,
        );
        const answers = records.filter((r) => r.type === "assistant");
        assert.deepEqual(answers.map((r) => r.message.stop_reason), expected.answers);
        if (last) assert.deepEqual(answers[0].message.content.map((b: { type: string }) => b.type), ["text", "tool_use"], "every block, kept as interrupted");
        const prompts = records.filter((r) => r.type === "user" && JSON.stringify(r.message.content).includes("RUNTOOL please"));
        assert.equal(prompts.length, 1, "the prompt once, though it may have been sent twice");
        const broken = readEvents(tap.root).slice(events).filter((e) => e.action === "broken-frame");
        if (fault.line === null) assert.equal(broken.length, 0);
        else {
          assert.equal(broken.length, 1);
          assert.match(String(broken[0].reason), fault.line);
        }
      });
    }

    it("health stays ok: the broken streams were the upstream's", async () => {
      const health = await (await fetch(`${tap.url}/_tap/health`)).json();
      assert.equal(health.status, "ok", JSON.stringify(health.problems));
      assert.equal(health.mirror.errors, 0);
    });
  });
}

describe("Claude Code signing its Bedrock requests for the tap's address", { timeout: 120_000 }, () => {
  let stub: ProviderStub;
  let tap: TestTap;
  let scratch: Scratch;

  before(async () => {
    stub = await startProviderStub();
    tap = await startTestTap(stub.url);
    scratch = makeScratch();
  });

  after(async () => {
    await tap?.close();
    await stub?.close();
    scratch?.cleanup();
  });

  it("is refused with the line naming proxy mode, which Claude Code shows; nothing reaches the upstream", async () => {
    const env = { ...BEDROCK(tap.url), CLAUDE_CODE_SKIP_BEDROCK_AUTH: "", AWS_ACCESS_KEY_ID: "AKIAEXAMPLEEXAMPLE", AWS_SECRET_ACCESS_KEY: "secret/EXAMPLE" };
    const run = await runClaude(["-p", "hello"], { baseUrl: tap.url, scratch, env, timeoutMs: 60_000 });
    assert.equal(run.code, 1, describeRun(run));
    assert.match(run.stdout, /^API Error: 400 sessiontap: this request is signed with AWS SigV4 .*proxy mode \(HTTPS_PROXY\)/, describeRun(run));
    assert.deepEqual(stub.requests.filter((r) => r.url.startsWith("/model/")), [], "no signed request was forwarded");
    const said = tap.stderrLines.filter((l) => /^sessiontap: refused a request to \/\S+: this request is signed with AWS SigV4/.test(l));
    assert.equal(said.length, 1, "said once, however many requests were refused");
    await tap.settled();
    const refused = readEvents(tap.root).filter((e) => e.action === "refuse" && e.reason === "signed for the tap's address");
    assert.ok(refused.some((e) => e.shape === "/model/*/invoke-with-response-stream"), JSON.stringify(refused));
    assert.ok(!JSON.stringify(readEvents(tap.root)).includes("AKIAEXAMPLE"));
  });
});
