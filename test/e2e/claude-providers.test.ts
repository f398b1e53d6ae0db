// Every way Claude Code reaches Claude is mirrored (docs/DESIGN.md "Providers"): the real Claude Code CLI,
// 2.1.328 and 2.1.332, on Google Vertex AI and on AWS Bedrock, each both ways — base-URL mode, and proxy mode
// (docs/DESIGN.md "Proxy mode": no base URL at all, HTTPS_PROXY at the tap and NODE_EXTRA_CA_CERTS at its CA,
// the provider's real host terminated and sent to the stub by SESSIONTAP_PROXY_UPSTREAM, tunnels off so
// nothing leaves the machine) — through a real tap to a loopback stub that speaks each provider's wire
// format (Vertex: the Messages API's SSE under its paths; Bedrock: AWS event-stream frames with correct
// CRCs). In proxy mode Claude Code holds real credentials: on Bedrock it signs with SigV4, which the stub
// verifies on every request with the test's keys; on Vertex it fetches a Google token from a loopback
// metadata server, which the stub expects on every request and no file of the tap's holds. A session with a
// tool call, then a resumed turn, is mirrored once each, as Claude Code's own transcript says; the stub's
// log shows the streamed path was the one taken (Claude Code falls back to the non-streaming one without a
// word when a stream does not read); then `sessiontap restore` brings a lost transcript back and
// `claude --resume` the same way carries on from it. Runs unchanged under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { type ExpectedAuth, type ProviderRequest, type ProviderStub, startProviderStub } from "../support/provider-stub.ts";
import { startProxyTap } from "../support/proxy-tap.ts";
import { startTestTap, type TestTap } from "../support/tap.ts";
import { type GceMetadata, startGceMetadata } from "../support/gce-metadata.ts";
import { TEST_AWS } from "../support/sigv4.ts";
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
  /** Base-URL mode: the provider's base URL at the tap, and its auth skipped (a gateway's setup). */
  env: (tap: string) => Record<string, string>;
  /** The host proxy mode terminates for it, and Claude Code's setup there: the provider's own, with real credentials. */
  host: string;
  proxyEnv: (metadata: GceMetadata) => Record<string, string | null>;
  /** What the stub checks of every request in proxy mode. */
  auth: (metadata: GceMetadata) => ExpectedAuth;
  /** The path of a streamed and of a non-streamed turn. */
  streamed: RegExp;
  unstreamed: RegExp;
}

const GOOGLE_TOKEN = "ya29.sessiontap-test-google-token-0123456789";

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
    host: "us-east5-aiplatform.googleapis.com",
    proxyEnv: (metadata) => ({
      CLAUDE_CODE_USE_VERTEX: "1",
      ANTHROPIC_VERTEX_PROJECT_ID: "p",
      CLOUD_ML_REGION: "us-east5",
      GCE_METADATA_HOST: metadata.host,
      GOOGLE_APPLICATION_CREDENTIALS: null,
    }),
    auth: (metadata) => ({ bearer: metadata.token }),
    streamed: /^\/v1\/projects\/p\/locations\/us-east5\/publishers\/anthropic\/models\/[^/:]+:streamRawPredict$/,
    unstreamed: /:rawPredict$/,
  },
  {
    name: "AWS Bedrock",
    env: (tap) => ({ CLAUDE_CODE_USE_BEDROCK: "1", ANTHROPIC_BEDROCK_BASE_URL: tap, AWS_REGION: "us-east-1", CLAUDE_CODE_SKIP_BEDROCK_AUTH: "1" }),
    host: "bedrock-runtime.us-east-1.amazonaws.com",
    proxyEnv: () => ({
      CLAUDE_CODE_USE_BEDROCK: "1",
      AWS_REGION: TEST_AWS.region,
      AWS_ACCESS_KEY_ID: TEST_AWS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: TEST_AWS.secretAccessKey,
      AWS_SESSION_TOKEN: null,
      AWS_PROFILE: null,
      AWS_BEARER_TOKEN_BEDROCK: null,
    }),
    auth: () => ({ sigV4For: "bedrock-runtime.us-east-1.amazonaws.com" }),
    streamed: /^\/model\/[^/]+\/invoke-with-response-stream$/,
    unstreamed: /^\/model\/[^/]+\/invoke$/,
  },
];

/** True for Claude Code's model probe (max_tokens 1, the prompt "."), which it sends before the first turn when it holds real credentials (mirrored to side/). */
const isProbe = (r: ProviderRequest) => {
  const body = JSON.parse(Buffer.from(r.body).toString("utf8"));
  return body.max_tokens === 1 && JSON.stringify(body.messages) === '[{"role":"user","content":"."}]';
};

/** Every file under `dir`, recursively. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => (statSync(`${dir}/${name}`).isDirectory() ? filesUnder(`${dir}/${name}`) : [`${dir}/${name}`]));

for (const provider of PROVIDERS) {
  for (const proxied of [false, true]) {
    for (const [version, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]] as const) {
      const mode = proxied ? "proxy mode, with no base URL" : "base-URL mode";
      describe(`Claude Code ${version} on ${provider.name} through the tap, ${mode}`, { timeout: 180_000 }, () => {
        let stub: ProviderStub;
        let metadata: GceMetadata;
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
            env: proxied
              ? {
                ...provider.proxyEnv(metadata),
                ANTHROPIC_BASE_URL: null,
                ANTHROPIC_API_KEY: null,
                HTTPS_PROXY: `http://127.0.0.1:${tap.proxy!.port}`,
                NODE_EXTRA_CA_CERTS: tap.proxy!.ca.certPath,
              }
              : { ...provider.env(tap.url), ANTHROPIC_BASE_URL: "", ANTHROPIC_API_KEY: "" },
          });
        const isConversation = (r: ProviderRequest) => provider.streamed.test(r.url.split("?")[0]) || provider.unstreamed.test(r.url.split("?")[0]);
        const isTurn = (r: ProviderRequest) => isConversation(r) && !isProbe(r);

        before(async () => {
          metadata = await startGceMetadata(GOOGLE_TOKEN);
          stub = await startProviderStub(proxied ? provider.auth(metadata) : undefined);
          // Tunnels off: Claude Code's other hosts (Bedrock's control plane among them) are refused, never reached.
          tap = proxied ? await startProxyTap(stub.url, [provider.host], { SESSIONTAP_PROXY_TUNNEL: "off" }) : await startTestTap(stub.url);
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
          await metadata?.close();
          scratch?.cleanup();
        });

        it("Claude Code took the streamed path through the tap for every turn, and printed the stub's answers", () => {
          // The stub numbers its replies; the model probes of proxy mode take numbers too.
          for (const r of runs) assert.match(r.stdout.trim(), /^Done \(reply \d+\)\.$/, describeRun(r));
          if (!proxied) assert.deepEqual(runs.map((r) => r.stdout.trim()), ["Done (reply 2).", "Done (reply 3)."]);
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

        it("health is ok and names nothing forwarded unseen; each answer was followed once, and in proxy mode each request came through the proxy", async () => {
          await tap.settled();
          const health = await (await fetch(`${tap.url}/_tap/health`)).json();
          assert.equal(health.status, "ok", JSON.stringify(health.problems));
          assert.deepEqual(health.mirror.notMirrored, { requests: 0, shapes: [] });
          assert.equal(health.mirror.skipped, 0);
          assert.equal(health.mirror.interrupted, 0);
          // On Bedrock Claude Code sends no credential (CLAUDE_CODE_SKIP_BEDROCK_AUTH=1): its metadata and cwd still make it one owner.
          assert.equal(health.mirror.borrowed, 0, "one session, nothing of it split off as a stranger's");
          // In base-URL mode Bedrock's control plane (GET /inference-profiles) comes to the base URL too; it is forwarded, never followed.
          assert.equal(health.mirror.responses, stub.requests.filter(isConversation).length, "each conversation's answer followed once, none twice");
          if (!proxied) return;
          const mine = provider.host.startsWith("bedrock") ? "bedrock" : "vertex";
          assert.deepEqual(health.proxy.forwarded, { anthropic: 0, vertex: 0, bedrock: 0, [mine]: stub.requests.length });
          assert.deepEqual(health.proxy.failed, {}, "every handshake held: the CA was trusted through NODE_EXTRA_CA_CERTS");
        });

        if (proxied) {
          it("the provider's credentials went upstream as Claude Code made them, and into no file the tap wrote", () => {
            assert.deepEqual(
              stub.requests.filter((r) => r.authProblem !== null).map((r) => `${r.url}: ${r.authProblem}`),
              [],
              "every request's credentials held",
            );
            const secrets = provider.host.startsWith("bedrock") ? [TEST_AWS.accessKeyId, TEST_AWS.secretAccessKey, "Signature="] : [GOOGLE_TOKEN];
            if (!provider.host.startsWith("bedrock")) assert.ok(metadata.tokens() >= 1, "Claude Code fetched its Google token");
            for (const file of [...filesUnder(dirname(tap.root)), ...filesUnder(dirname(tap.proxy!.ca.certPath))]) {
              const text = readFileSync(file, "latin1");
              for (const secret of secrets) assert.ok(!text.includes(secret), `${file} holds a credential`);
            }
          });
        }

        it("restore brings a lost transcript back, and `claude --resume` on the same provider carries on from it", async () => {
          writeFileSync(transcriptFile, ""); // Claude Code lost it
          const restored = await cli(["restore", sessionId, "--mirror-dir", tap.root, "--force"], {}, { home: scratch.home, cwd: scratch.project });
          assert.equal(restored.code, 0, restored.stderr);
          const from = stub.requests.length;
          const resumed = await run(["-p", "--resume", sessionId, PROMPTS[2]]);
          assert.equal(resumed.code, 0, describeRun(resumed));
          assert.match(resumed.stdout.trim(), /^Done \(reply \d+\)\.$/, describeRun(resumed));
          const sent = stub.requests.slice(from).filter(isTurn);
          assert.equal(sent.length, 1);
          assert.match(sent[0].url.split("?")[0], provider.streamed);
          const history = JSON.stringify(JSON.parse(Buffer.from(sent[0].body).toString("utf8")).messages);
          for (const s of [...PROMPTS, "hi-from-tool", ...runs.map((r) => r.stdout.trim())]) assert.ok(history.includes(s), `the resumed history lacks ${s}`);
          const now = (await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 4)).filter(isMain);
          assert.equal(now.filter((r) => r.reconstructed === true).length, 0, "nothing already mirrored was written again");
          assert.equal(now.length, 8);
        });
      });
    }
  }
}
