// The product's promise (SPEC §1): when Claude Code loses its transcript, the mirror puts it back where
// `claude --resume` finds it. Until `sessiontap restore` exists this test does what restore must at least
// do (the mirror's records of the session, written where Claude Code keeps its transcript), resumes the
// real CLI from them through the tap, and checks that the resumed turn is one the real API would accept
// and that the mirror stays exactly-once across it. Runs unchanged under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { writeFileSync } from "node:fs";
import { basename } from "node:path";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";
import { type ClaudeRun, describeRun, findTranscripts, makeScratch, pollUntil, type Rec, runClaude, type Scratch, sessionMirror } from "../support/claude.ts";

/** The Messages API accepts at most this many blocks with `cache_control` in one request. */
const MAX_CACHE_BREAKPOINTS = 4;

/** Every object under `value` that carries a `cache_control` key, with where it sits. */
function cacheMarkers(value: unknown, where: string, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v, i) => cacheMarkers(v, `${where}[${i}]`, out));
  else if (value !== null && typeof value === "object") {
    if ("cache_control" in value) out.push(where);
    for (const [k, v] of Object.entries(value)) if (k !== "cache_control") cacheMarkers(v, `${where}.${k}`, out);
  }
  return out;
}

const bodyOf = (i: number, stub: StubUpstream): Rec => JSON.parse(Buffer.from(stub.requests[i].body).toString("utf8"));
const main = (recs: Rec[]) => recs.filter((r) => r.type === "user" || r.type === "assistant");

describe("claude --resume from the mirror alone (the restore path)", { timeout: 120_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  let sessionId = "";
  let before3: Rec[] = []; // mirror records before the resumed turn
  let after3: Rec[] = []; // and after it
  let resumed: ClaudeRun;

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    scratch = makeScratch();
    const opts = { baseUrl: tap.url, scratch, timeoutMs: 60_000 };
    const first = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash"], opts);
    assert.equal(first.code, 0, describeRun(first));
    sessionId = stub.requests[0]?.headers["x-claude-code-session-id"] ?? "";
    const second = await runClaude(["-p", "--resume", sessionId, "and now a plain follow-up"], opts);
    assert.equal(second.code, 0, describeRun(second));
    before3 = await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 3);
    assert.equal(main(before3).length, 6, "the mirror holds the two runs (see claude-mirror.test.ts)");

    // Claude Code lost its transcript; put the mirror's records where it looks for them.
    const [transcript] = findTranscripts(scratch.home).filter((p) => basename(p) === `${sessionId}.jsonl`);
    assert.ok(transcript, "Claude Code's transcript path");
    writeFileSync(transcript, before3.map((r) => JSON.stringify(r)).join("\n") + "\n");

    resumed = await runClaude(["-p", "--resume", sessionId, "a third prompt after restore"], opts);
    after3 = await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant" && !x.reconstructed).length >= 4);
  });

  after(async () => {
    scratch?.cleanup();
  });

  it("Claude Code resumes the session from the mirror's records and answers", () => {
    assert.equal(resumed.timedOut, false, describeRun(resumed));
    assert.equal(resumed.code, 0, describeRun(resumed));
    assert.equal(resumed.stdout.trim(), "Done (reply 4).", describeRun(resumed));
    assert.equal(stub.requests.length, 4);
    assert.equal(stub.requests[3].headers["x-claude-code-session-id"], sessionId);
    // The whole conversation came back: the history Claude Code re-sent equals what it sent before.
    const turns = (b: Rec) => b.messages.filter((m: Rec) => m.role !== "system").map((m: Rec) => m.role);
    assert.deepEqual(turns(bodyOf(3, stub)), [...turns(bodyOf(2, stub)), "assistant", "user"]);
    const text = JSON.stringify(bodyOf(3, stub).messages);
    for (const s of ["RUNTOOL please", "hi-from-tool", "Done (reply 2).", "and now a plain follow-up", "Done (reply 3)."]) {
      assert.ok(text.includes(s), `the resumed history lacks ${s}`);
    }
  });

  it(`the resumed request stays within the API's ${MAX_CACHE_BREAKPOINTS} cache_control breakpoints`, () => {
    const b = bodyOf(3, stub);
    const markers = [...cacheMarkers(b.system, "system"), ...cacheMarkers(b.messages, "messages"), ...cacheMarkers(b.tools, "tools")];
    // Claude Code's own transcript never stores cache_control; markers restored from the mirror are
    // re-sent on top of the ones Claude Code places itself, and the real API rejects more than four.
    assert.ok(markers.length <= MAX_CACHE_BREAKPOINTS, `${markers.length} cache_control blocks: ${markers.join(", ")}`);
  });

  it("the mirror holds no cache_control marker (Claude Code's transcript has none)", () => {
    const markers = main(before3).flatMap((r) => cacheMarkers(r.message.content, `${r.type} ${r.uuid} content`));
    assert.deepEqual(markers, []);
  });

  it("the mirror still holds every message exactly once after the resumed turn", () => {
    const now = main(after3);
    const recon = now.filter((r) => r.reconstructed === true);
    assert.deepEqual(
      recon.map((r) => `${r.type} ${JSON.stringify(r.message.content).slice(0, 60)}`),
      [],
      "history the tap had already mirrored was written again as reconstructed records",
    );
    assert.deepEqual(now.slice(0, 6).map((r) => r.uuid), main(before3).map((r) => r.uuid), "the first six records are unchanged");
    assert.equal(now.filter((r) => r.type === "user").length, 4);
    assert.equal(now.filter((r) => r.type === "assistant").length, 4);
  });
});
