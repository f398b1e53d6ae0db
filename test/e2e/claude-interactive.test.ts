// Issue 4, end to end: the real interactive Claude Code CLI, driven in a pseudo-terminal (node-pty, the
// screen rendered by a headless xterm: test/support/terminal.ts) through a real tap against the
// stub upstream — a greeting, a tool call, /compact, a message, a rewind (Esc Esc → "Restore conversation")
// and a different message, then quit. The mirror must hold each prompt and answer once, the compaction as a
// boundary and a summary with the summarising exchange in side/, the rewind as two siblings, and match the
// transcript Claude Code wrote itself. Runs under `bun test` and `deno test`.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { basename } from "node:path";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { readEvents, readTree, type TestTap, withTap } from "../support/tap.ts";
import { findTranscripts, makeScratch, pollUntil, readJsonl, type Rec, type Scratch } from "../support/claude.ts";
import { textsOf } from "../support/client.ts";
import type { TerminalSession } from "../support/terminal.ts";
import { startInteractive } from "../support/interactive-claude.ts";
import { driveOnce } from "../support/scenario.ts";

const PROMPTS = ["hello interactive world", "RUNTOOL now please", "after compaction message", "a different path after rewind"];
const CRITICAL = "CRITICAL: Respond with TEXT ONLY";
const blocks = (c: unknown): Rec[] => (typeof c === "string" ? [{ type: "text", text: c }] : Array.isArray(c) ? c : []);
const isToolResult = (r: Rec) => blocks(r.message?.content).some((b) => b.type === "tool_result");
/** The message bodies of the stub's Messages API requests, in order. */
const bodies = (stub: StubUpstream) =>
  stub.requests.filter((r) => r.url.split("?")[0] === "/v1/messages").map((r) => ({
    n: stub.requests.indexOf(r) + 1,
    body: JSON.parse(new TextDecoder().decode(r.body)),
  }));
const lastUserText = (body: Rec): string => textsOf({ message: body.messages.filter((m: Rec) => m.role === "user").at(-1) ?? { content: [] } }).at(-1) ?? "";
/** Claude Code's assistant records grouped by message.id (first-seen order), content concatenated. */
type Answer = { id: string; content: Rec[] };
function groupAssistant(records: Rec[]): Answer[] {
  const out = new Map<string, Answer>();
  for (const r of records.filter((x) => x.type === "assistant")) {
    const g: Answer = out.get(r.message.id) ?? { id: r.message.id, content: [] };
    g.content.push(...r.message.content);
    out.set(r.message.id, g);
  }
  return [...out.values()];
}
/** User records that share one parentUuid with another user record, grouped. */
const siblingGroups = (records: Rec[]) => {
  const byParent = new Map<string, Rec[]>();
  for (const r of records.filter((x) => x.type === "user" && !isToolResult(x))) byParent.set(r.parentUuid, [...(byParent.get(r.parentUuid) ?? []), r]);
  return [...byParent.values()].filter((g) => g.length > 1);
};

describe("the interactive Claude Code CLI through the tap: /compact and a rewind (issue 4, e2e)", { timeout: 120_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  let term: TerminalSession | undefined;
  let sessionId = "";
  let main: Rec[] = []; // <root>/<session>/*.jsonl, in file order
  let side: Rec[] = []; // <root>/<session>/side/*.jsonl
  let transcript: Rec[] = []; // what Claude Code wrote
  withTap((started) => ({ stub, tap } = started));
  const ran = driveOnce(drive);

  async function drive(): Promise<void> {
    stub.setDefault({ kind: "conversation", summaries: true });
    scratch = makeScratch();
    const person = await startInteractive(stub, { baseUrl: tap.url, scratch, args: ["--allowedTools", "Bash"] });
    term = person.term;
    await person.say(PROMPTS[0]);
    await person.say(PROMPTS[1]);
    await term.waitFor("the tool's output", /Ran 1 shell command|hi-from-tool/, 5_000);
    await person.compact();
    await person.say(PROMPTS[2]);
    // Rewind: Esc Esc opens the list; pick the last message, then "Restore conversation".
    await person.rewindLast(PROMPTS[2]);
    await person.say(PROMPTS[3]);
    await person.quit();

    sessionId = stub.requests[0]?.headers["x-claude-code-session-id"] ?? "";
    // Every turn was on screen, so its records should be on disk; allow a short grace all the same.
    const answers = bodies(stub).filter(({ body }) => !lastUserText(body).startsWith(CRITICAL)).length;
    const tree = await pollUntil(
      () => [...readTree(tap.root).entries()] as [string, Rec[]][],
      (t) => t.flatMap(([, r]) => r).filter((r) => r.type === "assistant" && !r.isSidechain).length >= answers,
    );
    main = tree.filter(([p]) => p.startsWith(`${sessionId}/`) && p.split("/").length === 2).flatMap(([, r]) => r);
    side = tree.filter(([p]) => p.startsWith(`${sessionId}/side/`)).flatMap(([, r]) => r);
    assert.ok(
      main.length > 0,
      `no main-chain records for session ${sessionId}; files: ${JSON.stringify(tree.map(([p, r]) => `${p}: ${r.length}`))}; events: ${
        JSON.stringify(readEvents(tap.root)).slice(0, 2000)
      }`,
    );
    const files = findTranscripts(scratch.home).filter((p) => basename(p) === `${sessionId}.jsonl`);
    assert.equal(files.length, 1, `Claude Code's transcript for session ${sessionId}: ${JSON.stringify(findTranscripts(scratch.home))}`);
    transcript = readJsonl(files[0]);
  }

  after(async () => {
    term?.kill();
    scratch?.cleanup();
  });

  it("one session; the summarising request(s) came between the tool call and the next message", () => {
    ran();
    assert.match(sessionId, /^[0-9a-f-]{36}$/);
    for (const r of stub.requests) assert.equal(r.headers["x-claude-code-session-id"], sessionId);
    const kinds = bodies(stub).map(({ body }) => (lastUserText(body).startsWith(CRITICAL) ? "summarise" : "turn"));
    assert.match(kinds.join(","), /^turn,turn,turn,(summarise,)+turn,turn$/, "greeting, tool call + its result, /compact, message, rewound message");
  });

  it("the main chain holds each typed prompt once and in order, as Claude Code's transcript does", () => {
    ran();
    const ccPrompts = transcript
      .filter((r) => r.type === "user" && typeof r.message.content === "string" && !r.isCompactSummary && !r.isMeta && !r.message.content.startsWith("<"))
      .map((r) => r.message.content);
    assert.deepEqual(ccPrompts, PROMPTS, "Claude Code's own record of what was typed");
    const users = main.filter((r) => r.type === "user" && !r.isCompactSummary && !isToolResult(r));
    assert.deepEqual(users.map((r) => textsOf(r).at(-1)), PROMPTS, "each prompt ends one user record of the mirror");
    for (const prompt of PROMPTS) {
      assert.equal(main.flatMap((r) => (r.message ? textsOf(r) : [])).filter((t) => t === prompt).length, 1, `"${prompt}" appears once`);
    }
  });

  it("the main chain holds each assistant answer once, the same answers in the same order as Claude Code's transcript", () => {
    ran();
    const ours = main.filter((r) => r.type === "assistant").map((r) => ({ id: r.message.id, content: r.message.content }));
    assert.deepEqual(ours, groupAssistant(transcript));
    const answered = bodies(stub).filter(({ body }) => !lastUserText(body).startsWith(CRITICAL)).map(({ n }) => `msg_stub_${n}`);
    assert.deepEqual(ours.map((a) => a.id), answered, "every non-summarising request's answer, once");
  });

  it("the compaction: a compact_boundary root (logicalParentUuid → the last record before it), then the isCompactSummary record", () => {
    ran();
    const at = main.findIndex((r) => r.subtype === "compact_boundary");
    assert.ok(at > 0, "a compact_boundary record in the main chain");
    assert.equal(main.filter((r) => r.subtype === "compact_boundary").length, 1);
    const [boundary, summary] = main.slice(at, at + 2);
    assert.equal(boundary.type, "system");
    assert.equal(boundary.parentUuid, null);
    assert.equal(boundary.logicalParentUuid, main[at - 1].uuid);
    assert.equal(summary.type, "user");
    assert.equal(summary.isCompactSummary, true);
    assert.equal(summary.parentUuid, boundary.uuid);
    // Claude Code's transcript has the same structure, with the same summary text and the same logical parent.
    const ccBoundaries = transcript.filter((r) => r.subtype === "compact_boundary");
    assert.equal(ccBoundaries.length, 1);
    const ccSummary = transcript.find((r) => r.isCompactSummary === true)!;
    assert.equal(ccBoundaries[0].parentUuid, null);
    assert.equal(ccSummary.parentUuid, ccBoundaries[0].uuid);
    assert.deepEqual(textsOf(summary), [ccSummary.message.content]);
    assert.match(ccSummary.message.content, /Stub summary \(reply \d+\)\./, "Claude Code took the stub's <summary>");
    const byUuid = new Map(transcript.map((r) => [r.uuid, r]));
    let ccLogical = byUuid.get(ccBoundaries[0].logicalParentUuid);
    while (ccLogical !== undefined && ccLogical.type !== "assistant") ccLogical = byUuid.get(ccLogical.parentUuid);
    assert.equal(main[at - 1].message?.id, ccLogical?.message.id, "both boundaries follow the same answer");
    const [seg, ccSeg] = [boundary, ccBoundaries[0]].map((b) => b.compactMetadata?.preservedSegment ?? {});
    assert.deepEqual([seg.anchorUuid, ccSeg.anchorUuid], [summary.uuid, ccSummary.uuid], "the kept tail is anchored at the summary");
    const head = main.find((r) => r.uuid === seg.headUuid);
    assert.equal(head?.type, "assistant", "the kept tail starts at a mirrored answer");
    assert.equal(head?.message.id, byUuid.get(ccSeg.headUuid)?.message?.id, "the same kept tail as Claude Code's");
  });

  it("the summarising exchange is in side/ as sidechain records, and not in the main chain", () => {
    ran();
    const summarising = bodies(stub).filter(({ body }) => lastUserText(body).startsWith(CRITICAL)).map(({ n }) => `msg_stub_${n}`);
    assert.deepEqual(side.map((r) => r.type), summarising.flatMap(() => ["user", "assistant"]));
    assert.deepEqual(side.filter((r) => r.type === "assistant").map((r) => r.message.id), summarising);
    const mainUuids = new Set(main.map((r) => r.uuid));
    for (const r of side) {
      assert.equal(r.isSidechain, true);
      if (r.type === "user") {
        assert.ok(textsOf(r).at(-1)!.startsWith(CRITICAL));
        assert.ok(mainUuids.has(r.parentUuid), "hangs from a main-chain record");
      }
    }
    assert.ok(!main.some((r) => r.message && textsOf(r).some((t) => t.startsWith(CRITICAL))), "no summarising instruction in the main chain");
    assert.ok(!main.some((r) => r.isSidechain !== false), "no sidechain record in the main chain");
  });

  it("the rewind made two user records share one parent, as in Claude Code's transcript", () => {
    ran();
    const ours = siblingGroups(main);
    assert.equal(ours.length, 1, "one fork");
    assert.deepEqual(ours[0].map((r) => textsOf(r).at(-1)), [PROMPTS[2], PROMPTS[3]]);
    assert.equal(ours[0][0].parentUuid, main.find((r) => r.isCompactSummary === true)?.uuid, "both hang from the compacted segment's start");
    const cc = siblingGroups(transcript);
    assert.equal(cc.length, 1);
    assert.deepEqual(cc[0].map((r) => r.message.content), [PROMPTS[2], PROMPTS[3]]);
  });

  it("no record's content appears twice, every uuid is unique and every parent exists", () => {
    ran();
    const all = [...main, ...side];
    const seen = new Set<string>();
    for (const r of all.filter((x) => x.message !== undefined)) {
      // A user or assistant message exists once in the whole session; Claude Code's role:"system" entries
      // (type "system", subtype "api_message") legitimately recur once per branch, so they are keyed by parent.
      const key = JSON.stringify([r.type, r.message.content, r.type === "system" ? r.parentUuid : null]);
      assert.ok(!seen.has(key), `duplicate record: ${key.slice(0, 200)}`);
      seen.add(key);
    }
    const uuids = new Set(all.map((r) => r.uuid));
    assert.equal(uuids.size, all.length, "uuids unique");
    for (const r of all) assert.ok(r.parentUuid === null || uuids.has(r.parentUuid), `the parent of ${r.type} ${r.uuid} exists`);
  });
});
