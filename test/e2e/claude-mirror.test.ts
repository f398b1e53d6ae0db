// Issue 3, "Envelope parity with the real client": the real Claude Code CLI runs a tool call and then a
// `--resume` follow-up through a real tap against the stub; the mirror the tap wrote for that session is
// compared with the transcript Claude Code wrote itself: same user texts, tool results and assistant
// contents in order, each once, in the envelope of SPEC §4, with a key-set snapshot of Claude Code's own
// records kept as a fixture. Runs unchanged under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";
import {
  type ClaudeRun,
  describeRun,
  encodeProjectDir,
  findTranscripts,
  type KeySnapshot,
  keySnapshot,
  makeScratch,
  pollUntil,
  readJsonl,
  type Rec,
  runClaude,
  type Scratch,
  sessionMirror,
  unionOf,
} from "../support/claude.ts";

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "claude-code");
const SNAPSHOT: KeySnapshot & { claudeCodeVersion: string; derivedFrom: string } = JSON.parse(readFileSync(join(FIXTURES, "record-keys.json"), "utf8"));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// SPEC §4's mirror key sets.
const SPEC_USER = ["type", "uuid", "parentUuid", "isSidechain", "sessionId", "timestamp", "cwd", "version", "userType", "entrypoint", "message", "source"];
const SPEC_ASSISTANT = [...SPEC_USER, "requestId"];
const SPEC_ASSISTANT_MESSAGE = ["type", "role", "id", "model", "content", "stop_reason", "stop_sequence", "stop_details", "usage"];
const OURS = new Set(["source", "reconstructed"]); // envelope keys the mirror may add beyond Claude Code's

const PROMPTS = ["RUNTOOL please", "and now a plain follow-up"];
const isMain = (r: Rec) => r.type === "user" || r.type === "assistant";
const blocks = (content: unknown): Rec[] => (typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : []);
const toolResults = (records: Rec[]) =>
  records.flatMap((r) => blocks(r.message.content).filter((b) => b.type === "tool_result").map((b) => ({ tool_use_id: b.tool_use_id, content: b.content })));
const isToolResultRecord = (r: Rec) => blocks(r.message.content).some((b) => b.type === "tool_result");

type Grouped = { id: string; requestId: string; content: Rec[] };
/** Claude Code's assistant records grouped by message.id (first-seen order), content concatenated. */
function groupAssistant(records: Rec[]): Grouped[] {
  const out = new Map<string, Grouped>();
  for (const r of records.filter((x) => x.type === "assistant")) {
    const g: Grouped = out.get(r.message.id) ?? { id: r.message.id, requestId: r.requestId, content: [] };
    g.content.push(...r.message.content);
    out.set(r.message.id, g);
  }
  return [...out.values()];
}

describe("mirror vs Claude Code's own transcript (issue 3, envelope parity)", { timeout: 120_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  const runs: ClaudeRun[] = [];
  let sessionId = "";
  let transcriptFile = "";
  let transcript: Rec[] = []; // Claude Code's user/assistant records
  let fullTranscript: Rec[] = [];
  let mirrorAll: Rec[] = []; // every record of the session's main-conversation files, in file order
  let mirror: Rec[] = []; // its user/assistant records

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    scratch = makeScratch();
    const opts = { baseUrl: tap.url, scratch, timeoutMs: 60_000 };
    runs.push(await runClaude(["-p", PROMPTS[0], "--allowedTools", "Bash"], opts));
    assert.equal(runs[0].code, 0, `first run: ${describeRun(runs[0])}`);
    sessionId = stub.requests[0]?.headers["x-claude-code-session-id"] ?? "";
    runs.push(await runClaude(["-p", "--resume", sessionId, PROMPTS[1]], opts));
    assert.equal(runs[1].code, 0, `resumed run: ${describeRun(runs[1])}`);

    const files = findTranscripts(scratch.home).filter((p) => basename(p) === `${sessionId}.jsonl`);
    assert.equal(files.length, 1, `Claude Code's transcript for ${sessionId}: ${JSON.stringify(findTranscripts(scratch.home))}`);
    transcriptFile = files[0];
    fullTranscript = readJsonl(transcriptFile);
    transcript = fullTranscript.filter(isMain);

    // Claude Code has the answer before the tap's write lands (the client never waits for it): wait for the third.
    mirrorAll = await pollUntil(() => sessionMirror(tap.root, sessionId), (recs) => recs.filter((r) => r.type === "assistant").length >= 3);
    mirror = mirrorAll.filter(isMain);
  });

  after(async () => {
    scratch?.cleanup();
  });

  it("both CLI runs succeeded within their time bound, and printed the stub's replies", () => {
    assert.equal(runs.length, 2);
    for (const run of runs) assert.equal(run.timedOut, false, describeRun(run));
    assert.equal(runs[0].stdout.trim(), "Done (reply 2).", describeRun(runs[0]));
    assert.equal(runs[1].stdout.trim(), "Done (reply 3).", describeRun(runs[1]));
  });

  it("the tap did not alter what the CLI sent: one session, three complete JSON requests re-sending the history", () => {
    assert.match(sessionId, UUID);
    assert.equal(stub.requests.length, 3, JSON.stringify(stub.requests.map((r) => `${r.method} ${r.url}`)));
    let previous = 0;
    for (const r of stub.requests) {
      assert.equal(r.headers["x-claude-code-session-id"], sessionId);
      const declared = r.headers["content-length"];
      if (declared !== undefined) assert.equal(r.body.byteLength, Number(declared));
      const body = JSON.parse(Buffer.from(r.body).toString("utf8"));
      const turns = body.messages.filter((m: Rec) => m.role !== "system").length;
      assert.ok(turns > previous, "each request carries the whole history so far");
      previous = turns;
    }
    assert.equal(previous, 5, "the last request re-sends user, assistant, tool result, assistant and the follow-up");
    assert.equal(basename(dirname(transcriptFile)), encodeProjectDir(scratch.project));
  });

  it("(a) the same user prompts in the same order", () => {
    const ccUsers = transcript.filter((r) => r.type === "user");
    const ours = mirror.filter((r) => r.type === "user");
    assert.deepEqual(ours.map(isToolResultRecord), ccUsers.map(isToolResultRecord), "user records pair up (prompt / tool result)");
    const ccPrompts = ccUsers.filter((r) => !isToolResultRecord(r));
    assert.deepEqual(ccPrompts.map((r) => r.message.content), PROMPTS);
    ours.forEach((m, i) => {
      if (isToolResultRecord(m)) return;
      for (const b of blocks(ccUsers[i].message.content).filter((x) => x.type === "text")) {
        const texts = blocks(m.message.content).filter((x) => x.type === "text").map((x) => x.text);
        assert.ok(texts.includes(b.text), `mirror user record ${i} lacks the text block ${JSON.stringify(b.text)}: ${JSON.stringify(texts).slice(0, 400)}`);
      }
    });
  });

  it("(b) the same tool results in the same order", () => {
    const cc = toolResults(transcript.filter((r) => r.type === "user"));
    assert.ok(cc.length >= 1, "the run made a tool call");
    assert.deepEqual(toolResults(mirror.filter((r) => r.type === "user")), cc);
    assert.equal(cc[0].content, "hi-from-tool");
  });

  it("(c) the same assistant contents in the same order (Claude Code's per-block records grouped by message.id)", () => {
    const cc = groupAssistant(transcript);
    const ours = mirror.filter((r) => r.type === "assistant").map((r) => ({ id: r.message.id, content: r.message.content }));
    assert.deepEqual(ours, cc.map(({ id, content }) => ({ id, content })));
    assert.equal(cc.length, 3);
  });

  it("(d) every message exactly once although the history was sent three times", () => {
    const ids = mirror.filter((r) => r.type === "assistant").map((r) => r.message.id);
    assert.deepEqual(ids, [...new Set(ids)], "an assistant message.id repeats");
    const users = mirror.filter((r) => r.type === "user").map((r) => JSON.stringify(r.message.content));
    assert.equal(users.length, 3, "three user messages: prompt, tool result, follow-up");
    assert.equal(new Set(users).size, users.length, "a user message repeats");
    assert.equal(mirror.length, 6);
    const uuids = mirrorAll.map((r) => r.uuid);
    assert.equal(new Set(uuids).size, uuids.length, "a uuid repeats");
  });

  it("(e) every record carries SPEC §4's envelope with the right values and a valid parentUuid chain", () => {
    const ccByMessage = new Map(groupAssistant(transcript).map((g) => [g.id, g.requestId]));
    const ccEntrypoint = transcript[0].entrypoint;
    for (const r of mirror) {
      const where = `${r.type} ${r.uuid}`;
      for (const k of r.type === "user" ? SPEC_USER : SPEC_ASSISTANT) assert.ok(k in r, `${where} lacks ${k}`);
      assert.equal(r.cwd, scratch.project, `${where} cwd`);
      assert.equal(r.sessionId, sessionId, `${where} sessionId`);
      assert.equal(r.source, "sessiontap", `${where} source`);
      assert.equal(r.userType, "external");
      assert.equal(r.isSidechain, false);
      assert.equal(r.version, transcript[0].version, `${where}: the client's version, as Claude Code wrote it`);
      assert.equal(r.entrypoint, ccEntrypoint, `${where} entrypoint as Claude Code recorded it`);
      assert.ok(!Number.isNaN(Date.parse(r.timestamp)), `${where} timestamp`);
      assert.equal(r.reconstructed, undefined, `${where}: the tap saw every turn, nothing is reconstructed`);
      assert.equal(r.message.role, r.type);
      if (r.type === "assistant") {
        for (const k of SPEC_ASSISTANT_MESSAGE) assert.ok(k in r.message, `${where} message lacks ${k}`);
        // The stub answers request N with message msg_stub_N and header request-id: req_stub_N.
        assert.equal(r.requestId, r.message.id.replace(/^msg_stub_/, "req_stub_"), `${where} requestId`);
        assert.equal(r.requestId, ccByMessage.get(r.message.id), `${where} requestId as Claude Code recorded it`);
      }
    }
    const seen = new Set<string>();
    mirrorAll.forEach((r, i) => {
      assert.match(r.uuid, UUID, `record ${i} uuid`);
      if (i === 0) assert.equal(r.parentUuid, null, "the first record is a root");
      else assert.ok(seen.has(r.parentUuid), `record ${i} (${r.type}) has parent ${r.parentUuid}, not an earlier uuid`);
      seen.add(r.uuid);
    });
    const parent = new Map(mirrorAll.map((r) => [r.uuid, r.parentUuid]));
    const walked = new Set<string>();
    for (let at: string | null = mirrorAll.at(-1)!.uuid; at !== null; at = parent.get(at) ?? null) {
      assert.ok(!walked.has(at), "the parentUuid chain loops");
      walked.add(at);
    }
    for (const r of mirror) assert.ok(walked.has(r.uuid), `${r.type} ${r.uuid} is not on the chain from the last record to the root`);
  });

  it("(f) the key-set snapshot matches the transcript Claude Code just wrote (and the committed capture)", () => {
    const live = keySnapshot(fullTranscript);
    const version = transcript.map((r) => r.version).find((v) => typeof v === "string");
    assert.equal(version, SNAPSHOT.claudeCodeVersion, "Claude Code's version moved: re-derive record-keys.json");
    assert.deepEqual(
      live,
      { user: SNAPSHOT.user, assistant: SNAPSHOT.assistant },
      "Claude Code's record envelope changed: review SPEC §4 and re-derive record-keys.json",
    );
    const capture = keySnapshot(readJsonl(join(FIXTURES, "..", "..", "..", SNAPSHOT.derivedFrom)));
    assert.deepEqual(capture, { user: SNAPSHOT.user, assistant: SNAPSHOT.assistant });
  });

  it("(f) the mirror invents no envelope key Claude Code does not have, besides source and reconstructed", () => {
    const ccUser = unionOf(SNAPSHOT.user.record);
    const ccAssistant = unionOf(SNAPSHOT.assistant.record);
    const ccUserMessage = unionOf(SNAPSHOT.user.message);
    const ccAssistantMessage = unionOf(SNAPSHOT.assistant.message);
    for (const k of SPEC_USER) if (!OURS.has(k)) assert.ok(ccUser.has(k), `SPEC user key ${k} is not Claude Code's`);
    for (const k of SPEC_ASSISTANT) if (!OURS.has(k)) assert.ok(ccAssistant.has(k), `SPEC assistant key ${k} is not Claude Code's`);
    for (const k of SPEC_ASSISTANT_MESSAGE) assert.ok(ccAssistantMessage.has(k), `SPEC message key ${k} is not Claude Code's`);
    for (const r of mirror) {
      const keys = r.type === "user" ? ccUser : ccAssistant;
      const messageKeys = r.type === "user" ? ccUserMessage : ccAssistantMessage;
      for (const k of Object.keys(r)) assert.ok(keys.has(k) || OURS.has(k), `mirror ${r.type} record key ${k} is not in Claude Code's envelope`);
      for (const k of Object.keys(r.message)) assert.ok(messageKeys.has(k), `mirror ${r.type} message key ${k} is not in Claude Code's`);
    }
  });
});
