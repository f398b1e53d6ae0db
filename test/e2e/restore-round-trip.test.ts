// Issue 6, "Round trip through the real client": the real Claude Code CLI runs a three-turn session with a
// tool call through a tap (stub upstream); its transcript is then cut down to metadata records only, as
// the stub-rewrite bug leaves it; `sessiontap restore` (main() in this process) puts the conversation
// back; and `claude -p --resume` must send the upstream the whole history again. Also: restore into a
// missing project directory and into a working directory long enough for Claude Code's name truncation,
// refusing a transcript with content, --force keeping a backup, and a compacted, rewound session (the
// real interactive capture replayed through the tap) resuming with the history Claude Code last sent.
// Runs unchanged under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { type RecordedRequest, type StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";
import { describeRun, findTranscripts, makeScratch, pollUntil, readJsonl, type Rec, runClaude, type Scratch, sessionMirror } from "../support/claude.ts";
import { capturedRequests } from "../support/captures.ts";
import { CAPTURE, cli, replayCapture } from "../support/recover.ts";

const NOW = Date.parse("2026-11-30T12:00:00.000Z");
const STAMP = "20261130T120000Z";
const PROMPTS = ["RUNTOOL please", "second turn", "third turn"];

const bodyOf = (r: RecordedRequest): Rec => JSON.parse(Buffer.from(r.body).toString("utf8"));
/** Requests to the Messages API proper (not count_tokens), from index `from` on. */
const messageRequests = (stub: StubUpstream, from = 0) => stub.requests.slice(from).filter((r) => r.url.split("?")[0] === "/v1/messages");
/** The conversation a request carries, as the API sees it: roles and what each message says, less Claude Code's reminders. */
function essence(body: Rec): string[] {
  const out: string[] = [];
  for (const m of body.messages as Rec[]) {
    if (m.role === "system") continue;
    const blocks: Rec[] = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    const parts = blocks
      .filter((b) => !(b.type === "text" && /^\s*</.test(String(b.text))))
      .map((
        b,
      ) => (b.type === "text"
        ? String(b.text)
        : b.type === "tool_use"
        ? `tool_use ${b.id} ${JSON.stringify(b.input)}`
        : b.type === "tool_result"
        ? `tool_result ${b.tool_use_id} ${JSON.stringify(b.content)}`
        : String(b.type))
      );
    out.push(`${m.role}: ${parts.join(" | ")}`);
  }
  return out;
}

describe("restore round trip through the real Claude Code CLI", { timeout: 240_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  let sessionId = "";
  let transcript = "";
  let lastSent: Rec = {}; // the body of the last turn before the transcript was lost
  let lastAnswer = "";
  let stubLines = "";
  const restore = (...args: string[]) =>
    cli(["restore", ...args, "--mirror-dir", tap.root], {}, { home: scratch.home, cwd: scratch.project, clock: () => NOW });

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    scratch = makeScratch();
    const opts = { baseUrl: tap.url, scratch, timeoutMs: 60_000 };
    const first = await runClaude(["-p", PROMPTS[0], "--allowedTools", "Bash"], opts);
    assert.equal(first.code, 0, describeRun(first));
    sessionId = stub.requests[0]?.headers["x-claude-code-session-id"] ?? "";
    for (const prompt of PROMPTS.slice(1)) {
      const run = await runClaude(["-p", "--resume", sessionId, prompt], opts);
      assert.equal(run.code, 0, describeRun(run));
      lastAnswer = run.stdout.trim();
    }
    lastSent = bodyOf(messageRequests(stub).at(-1)!);
    await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant" && !x.reconstructed).length >= 4);
    [transcript] = findTranscripts(scratch.home).filter((p) => basename(p) === `${sessionId}.jsonl`);
    assert.ok(transcript, "Claude Code wrote its transcript");
    // The stub-rewrite failure: only metadata records are left.
    stubLines = readJsonl(transcript).filter((r) => typeof r.uuid !== "string").map((r) => JSON.stringify(r) + "\n").join("");
    assert.ok(stubLines.length > 0 && !/"type":"(user|assistant)"/.test(stubLines));
    writeFileSync(transcript, stubLines);
  });

  after(async () => {
    scratch?.cleanup();
  });

  it("`list` shows Claude Code's transcript as a stub", async () => {
    const list = await cli(["list", "--json", "--mirror-dir", tap.root], {}, { home: scratch.home });
    const entry = JSON.parse(list.stdout).find((s: Rec) => s.sessionId === sessionId);
    assert.equal(entry.claudeTranscript, "stub");
    assert.equal(entry.claudeTranscriptPath, transcript);
    assert.equal(entry.firstPrompt, PROMPTS[0]);
  });

  it("restore backs the stub up and writes the conversation back, 0600", async () => {
    const out = await restore(sessionId.slice(0, 8));
    assert.equal(out.code, 0, out.stderr);
    assert.equal(readFileSync(`${transcript}.bak-${STAMP}`, "utf8"), stubLines);
    assert.equal(statSync(transcript).mode & 0o777, 0o600);
    const all = readJsonl(transcript);
    const written = all.filter((r) => typeof r.uuid === "string");
    assert.ok(all.some((r) => r.type === "mode"), "the stub's own records are kept");
    // Each turn as Claude Code keeps it: the prompt as typed, then the context it injected as attachments.
    assert.deepEqual([written[0].type, written[0].message.content], ["user", PROMPTS[0]]);
    assert.ok(written.some((r) => r.type === "attachment" && r.attachment.type === "environment"), "the environment, as an attachment");
    assert.deepEqual(written.filter((r) => r.type !== "attachment").map((r) => r.type), [
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
    assert.ok(out.stdout.includes(`claude --resume ${sessionId}`));
  });

  it("`claude --resume` sends the upstream the whole restored history", async () => {
    const from = stub.requests.length;
    const run = await runClaude(["-p", "--resume", sessionId, "fourth, after restore"], { baseUrl: tap.url, scratch });
    assert.equal(run.code, 0, describeRun(run));
    const sent = messageRequests(stub, from);
    assert.equal(sent.length, 1, "one request for the resumed turn");
    const body = bodyOf(sent[0]);
    assert.equal(sent[0].headers["x-claude-code-session-id"], sessionId);
    assert.deepEqual(essence(body), [...essence(lastSent), `assistant: ${lastAnswer}`, "user: fourth, after restore"]);
    const text = JSON.stringify(body.messages);
    for (const s of [...PROMPTS, "hi-from-tool", "toolu_stub_1"]) assert.ok(text.includes(s), s);
  });

  it("a transcript with content is left alone; --force keeps a backup of it", async () => {
    const before = readFileSync(transcript, "utf8");
    assert.ok(before.includes("fourth, after restore"), "Claude Code wrote on after the resume");
    const refused = await restore(sessionId);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /left alone/);
    assert.equal(readFileSync(transcript, "utf8"), before);
    const forced = await restore(sessionId, "--force");
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(readFileSync(`${transcript}.bak-${STAMP}-1`, "utf8"), before, "the second backup of the same second gets its own name");
    assert.equal(readFileSync(`${transcript}.bak-${STAMP}`, "utf8"), stubLines, "the first backup is untouched");
  });

  it("into a missing project directory: created 0700, and Claude Code resumes from it", async () => {
    const project = dirname(transcript);
    rmSync(project, { recursive: true, force: true });
    const out = await restore(sessionId);
    assert.equal(out.code, 0, out.stderr);
    assert.equal(statSync(project).mode & 0o777, 0o700);
    assert.equal(basename(project), encodeProjectDir(scratch.project));
    const from = stub.requests.length;
    const run = await runClaude(["-p", "--resume", sessionId, "fifth"], { baseUrl: tap.url, scratch });
    assert.equal(run.code, 0, describeRun(run));
    const text = JSON.stringify(bodyOf(messageRequests(stub, from)[0]).messages);
    for (const s of [...PROMPTS, "hi-from-tool", "fourth, after restore", "fifth"]) assert.ok(text.includes(s), s);
  });

  it("into a working directory whose encoded name exceeds 200 characters: Claude Code finds it there", async () => {
    const long = `${scratch.project}/${"a-rather-long-directory-name-".repeat(3)}/${"and-another-one-just-as-long-".repeat(3)}/${
      "third-level-to-pass-two-hundred".repeat(2)
    }`;
    mkdirSync(long, { recursive: true });
    assert.ok(long.replace(/[^A-Za-z0-9]/g, "-").length > 200);
    const out = await restore(sessionId, "--cwd", long);
    assert.equal(out.code, 0, out.stderr);
    const name = encodeProjectDir(long);
    assert.ok(existsSync(`${scratch.home}/.claude/projects/${name}/${sessionId}.jsonl`));
    const from = stub.requests.length;
    const run = await runClaude(["-p", "--resume", sessionId, "from the long directory"], { baseUrl: tap.url, scratch: { ...scratch, project: long } });
    assert.equal(run.code, 0, describeRun(run));
    assert.ok(JSON.stringify(bodyOf(messageRequests(stub, from)[0]).messages).includes("hi-from-tool"), "resumed with the history");
    const same = readdirSync(`${scratch.home}/.claude/projects`).filter((d) => d.startsWith(name.slice(0, 200)));
    assert.deepEqual(same, [name], "Claude Code used the directory restore chose (same truncation and hash)");
    assert.ok(readFileSync(`${scratch.home}/.claude/projects/${name}/${sessionId}.jsonl`, "utf8").includes("from the long directory"));
  });

  it("a compacted, rewound session resumes with the history Claude Code last sent: summary, kept tail, current branch", async () => {
    const captured = await replayCapture(tap, stub);
    const out = await restore(captured, "--cwd", scratch.project);
    assert.equal(out.code, 0, out.stderr);
    const from = stub.requests.length;
    const run = await runClaude(["-p", "--resume", captured, "after restore"], { baseUrl: tap.url, scratch });
    assert.equal(run.code, 0, describeRun(run));
    const body = bodyOf(messageRequests(stub, from)[0]);
    const lastCaptured = capturedRequests(CAPTURE).at(-1)!.body;
    const resumed = essence(body);
    // Claude Code merges consecutive user messages; compare what each side says, in order.
    const said = (lines: string[]) => lines.flatMap((l) => l.replace(/^\w+: /, "").split(" | ")).filter((s) => s !== "");
    assert.deepEqual(said(resumed), [...said(essence(lastCaptured as Rec)), "Done (reply 7).", "after restore"]);
    assert.ok(resumed[0].startsWith("user: This session is being continued"), "starts from the summary");
    const text = JSON.stringify(body.messages);
    assert.ok(!text.includes("hello interactive world"), "nothing from before the compaction but its kept tail");
    assert.ok(!text.includes("after compaction message"), "the rewound branch is not resumed");
  });
});
