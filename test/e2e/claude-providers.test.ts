// Every way Claude Code reaches Claude is mirrored (docs/DESIGN.md "Providers"): the real Claude Code CLI,
// 2.1.328 and 2.1.332, on Google Vertex AI and on AWS Bedrock in base-URL mode, through a real tap to a
// loopback stub that speaks each provider's wire format (Vertex: the Messages API's SSE under its paths;
// Bedrock: AWS event-stream frames with correct CRCs). A session with a tool call, then a resumed turn, is
// mirrored once each, as Claude Code's own transcript says; the stub's log shows the streamed path was
// the one taken (Claude Code falls back to the non-streaming one without a word when a stream does not
// read); then `sessiontap restore` brings a lost transcript back and `claude --resume` through the same
// provider carries on from it. Runs unchanged under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { writeFileSync } from "node:fs";
import { basename } from "node:path";
import { type ProviderRequest, type ProviderStub, startProviderStub } from "../support/provider-stub.ts";
import { startTestTap, type TestTap } from "../support/tap.ts";
import {
  CLAUDE_BIN,
  CLAUDE_NEXT_BIN,
  type ClaudeRun,
  describeRun,
  findTranscripts,
  makeScratch,
  pollUntil,
  readJsonl,
  type Rec,
  runClaude,
  type Scratch,
  sessionMirror,
} from "../support/claude.ts";
import { cli } from "../support/recover.ts";

const PROMPTS = ["RUNTOOL please", "and now a plain follow-up", "a third prompt after restore"];
const isMain = (r: Rec) => r.type === "user" || r.type === "assistant";
const blocks = (content: unknown): Rec[] => (typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : []);
const toolResults = (records: Rec[]) =>
  records.flatMap((r) => blocks(r.message.content).filter((b) => b.type === "tool_result").map((b) => ({ tool_use_id: b.tool_use_id, content: b.content })));
/** Claude Code's assistant records grouped by message.id (it writes one record per block), in order. */
type Grouped = { id: string; requestId: string; model: string; content: Rec[] };
function groupAssistant(records: Rec[]): Grouped[] {
  const out = new Map<string, Grouped>();
  for (const r of records.filter((x) => x.type === "assistant")) {
    const g: Grouped = out.get(r.message.id) ?? { id: r.message.id, requestId: r.requestId, model: r.message.model, content: [] };
    g.content.push(...r.message.content);
    out.set(r.message.id, g);
  }
  return [...out.values()];
}

/** A provider as Claude Code is set up for it, and how its paths look. */
interface Setup {
  name: string;
  env: (tap: string) => Record<string, string>;
  /** The path of a streamed and of a non-streamed turn. */
  streamed: RegExp;
  unstreamed: RegExp;
}

const PROVIDERS: Setup[] = [
  {
    name: "Google Vertex AI",
    env: (tap) => ({
      CLAUDE_CODE_USE_VERTEX: "1",
      ANTHROPIC_VERTEX_BASE_URL: `${tap}/v1`,
      ANTHROPIC_VERTEX_PROJECT_ID: "p",
      CLOUD_ML_REGION: "us-east5",
      CLAUDE_CODE_SKIP_VERTEX_AUTH: "1",
    }),
    streamed: /^\/v1\/projects\/p\/locations\/us-east5\/publishers\/anthropic\/models\/[^/:]+:streamRawPredict$/,
    unstreamed: /:rawPredict$/,
  },
  {
    name: "AWS Bedrock",
    env: (tap) => ({ CLAUDE_CODE_USE_BEDROCK: "1", ANTHROPIC_BEDROCK_BASE_URL: tap, AWS_REGION: "us-east-1", CLAUDE_CODE_SKIP_BEDROCK_AUTH: "1" }),
    streamed: /^\/model\/[^/]+\/invoke-with-response-stream$/,
    unstreamed: /^\/model\/[^/]+\/invoke$/,
  },
];

for (const provider of PROVIDERS) {
  for (const [version, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]] as const) {
    describe(`Claude Code ${version} on ${provider.name} through the tap`, { timeout: 180_000 }, () => {
      let stub: ProviderStub;
      let tap: TestTap;
      let scratch: Scratch;
      const runs: ClaudeRun[] = [];
      let sessionId = "";
      let transcriptFile = "";
      let transcript: Rec[] = [];
      let mirror: Rec[] = [];
      let turns: ProviderRequest[] = [];
      const run = (args: string[]) =>
        runClaude(args, {
          baseUrl: tap.url,
          scratch,
          bin,
          // Nothing of the Anthropic API is set: the provider's own variables are all Claude Code has.
          env: { ...provider.env(tap.url), ANTHROPIC_BASE_URL: "", ANTHROPIC_API_KEY: "" },
        });
      const isTurn = (r: ProviderRequest) => provider.streamed.test(r.url.split("?")[0]) || provider.unstreamed.test(r.url.split("?")[0]);

      before(async () => {
        stub = await startProviderStub();
        tap = await startTestTap(stub.url);
        scratch = makeScratch();
        runs.push(await run(["-p", PROMPTS[0], "--allowedTools", "Bash"]));
        assert.equal(runs[0].code, 0, describeRun(runs[0]));
        sessionId = stub.requests.find(isTurn)?.headers["x-claude-code-session-id"] ?? "";
        runs.push(await run(["-p", "--resume", sessionId, PROMPTS[1]]));
        assert.equal(runs[1].code, 0, describeRun(runs[1]));
        turns = stub.requests.filter(isTurn);
        [transcriptFile] = findTranscripts(scratch.home).filter((p) => basename(p) === `${sessionId}.jsonl`);
        assert.ok(transcriptFile, `Claude Code's transcript for ${sessionId}`);
        transcript = readJsonl(transcriptFile).filter(isMain);
        mirror = (await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 3)).filter(isMain);
      });

      after(async () => {
        await tap?.close();
        await stub?.close();
        scratch?.cleanup();
      });

      it("Claude Code took the streamed path through the tap for every turn, and printed the stub's answers", () => {
        assert.equal(runs[0].stdout.trim(), "Done (reply 2).", describeRun(runs[0]));
        assert.equal(runs[1].stdout.trim(), "Done (reply 3).", describeRun(runs[1]));
        assert.equal(turns.length, 3, JSON.stringify(stub.requests.map((r) => `${r.method} ${r.url}`)));
        for (const t of turns) {
          assert.match(t.url.split("?")[0], provider.streamed, "a non-streamed turn means Claude Code could not read the stream");
          assert.equal(t.headers["x-claude-code-session-id"], sessionId);
          assert.equal(JSON.parse(Buffer.from(t.body).toString("utf8")).model, undefined, "the model travels in the path");
        }
      });

      it("the mirror holds the same prompts, tool results and answers as Claude Code's transcript, each once", () => {
        const ccPrompts = transcript.filter((r) => r.type === "user" && !blocks(r.message.content).some((b) => b.type === "tool_result"));
        assert.deepEqual(ccPrompts.map((r) => r.message.content), PROMPTS.slice(0, 2));
        const texts = mirror.filter((r) => r.type === "user").flatMap((r) => blocks(r.message.content).filter((b) => b.type === "text").map((b) => b.text));
        for (const p of PROMPTS.slice(0, 2)) assert.equal(texts.filter((t) => t === p).length, 1, `the prompt ${p} once`);
        assert.deepEqual(toolResults(mirror.filter((r) => r.type === "user")), toolResults(transcript.filter((r) => r.type === "user")));
        assert.equal(toolResults(mirror)[0]?.content, "hi-from-tool");
        const cc = groupAssistant(transcript);
        assert.equal(cc.length, 3);
        const ours = mirror.filter((r) => r.type === "assistant");
        assert.deepEqual(ours.map((r) => ({ id: r.message.id, content: r.message.content })), cc.map(({ id, content }) => ({ id, content })));
        assert.equal(mirror.filter((r) => r.type === "user").length, 3, "prompt, tool result, follow-up");
        assert.equal(new Set(mirror.map((r) => r.uuid)).size, mirror.length);
      });

      it("every record carries the session, the working directory and the client's version; answers their model and request id as Claude Code has them", () => {
        const cc = new Map(groupAssistant(transcript).map((g) => [g.id, g]));
        for (const r of mirror) {
          assert.equal(r.sessionId, sessionId);
          assert.equal(r.cwd, scratch.project);
          assert.equal(r.version, version);
          assert.equal(r.source, "sessiontap");
          assert.equal(r.reconstructed, undefined);
          if (r.type !== "assistant") continue;
          assert.equal(r.message.model, cc.get(r.message.id)!.model);
          assert.equal(r.requestId, cc.get(r.message.id)!.requestId);
          assert.equal(typeof r.requestId, "string");
        }
      });

      it("health is ok and names nothing forwarded unseen", async () => {
        const health = await (await fetch(`${tap.url}/_tap/health`)).json();
        assert.equal(health.status, "ok", JSON.stringify(health.problems));
        assert.deepEqual(health.mirror.notMirrored, { requests: 0, shapes: [] });
        assert.equal(health.mirror.skipped, 0);
        assert.equal(health.mirror.interrupted, 0);
      });

      it("restore brings a lost transcript back, and `claude --resume` on the same provider carries on from it", async () => {
        writeFileSync(transcriptFile, ""); // Claude Code lost it
        const restored = await cli(["restore", sessionId, "--mirror-dir", tap.root, "--force"], {}, { home: scratch.home, cwd: scratch.project });
        assert.equal(restored.code, 0, restored.stderr);
        const from = stub.requests.length;
        const resumed = await run(["-p", "--resume", sessionId, PROMPTS[2]]);
        assert.equal(resumed.code, 0, describeRun(resumed));
        assert.equal(resumed.stdout.trim(), "Done (reply 4).", describeRun(resumed));
        const sent = stub.requests.slice(from).filter(isTurn);
        assert.equal(sent.length, 1);
        assert.match(sent[0].url.split("?")[0], provider.streamed);
        const history = JSON.stringify(JSON.parse(Buffer.from(sent[0].body).toString("utf8")).messages);
        for (const s of [...PROMPTS, "hi-from-tool", "Done (reply 2).", "Done (reply 3)."]) assert.ok(history.includes(s), `the resumed history lacks ${s}`);
        const now = (await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 4)).filter(isMain);
        assert.equal(now.filter((r) => r.reconstructed === true).length, 0, "nothing already mirrored was written again");
        assert.equal(now.length, 8);
      });
    });
  }
}
