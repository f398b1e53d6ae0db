// The guard on real files: Claude Code 2.1.328's own transcript of a session (the interactive capture:
// a tool call, /compact, a rewind) in a scratch config dir, and the commits the mirror hands over for the
// same requests. Healthy raises nothing; deleted, cut to a stub, or started afresh raises one alert each
// (one stderr line per session and state, a guard-alert event); restored clears it. Its reads are bounded
// (looks per minute, bytes per look, a tail window), it never writes or keeps Claude Code's file open, and
// a transcript it never found is counted, not alerted. Every wait polls the guard's own state, bounded.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { Guard, type GuardOptions } from "../../src/guard/guard.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { hashMessages } from "../../src/protocol/lineage.ts";
import { isCompaction } from "../../src/protocol/classify.ts";
import type { CommitJob } from "../../src/protocol/commit-job.ts";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { capturedRequests, capturedTranscript } from "../support/captures.ts";
import { pollAsync } from "../support/poll.ts";

const CAPTURE = "cc-2.1.328-interactive-compact-rewind";
const CWD = "/tmp/cchome3/proj"; // the capture's working directory, as its environment block names it
const requests = capturedRequests(CAPTURE);
const SESSION = requests[0].headers["x-claude-code-session-id"];
const transcript = capturedTranscript(CAPTURE);
const lines = (records: Record<string, unknown>[]) => records.map((r) => JSON.stringify(r) + "\n").join("");
/** The transcript as it stood after the last turn (everything), and as a fresh file would hold only that turn. */
const WHOLE = lines(transcript);
const LAST_PROMPT_AT = transcript.findLastIndex((r) => r.type === "user" && r.message?.content === "a different path after rewind");
const FRESH = lines(transcript.slice(LAST_PROMPT_AT - 1).map((r, i) => (i === 1 ? { ...r, parentUuid: null } : r)));
const STUB = lines(transcript.filter((r) => typeof r.uuid !== "string"));

/** A commit as the mirror hands it to the guard, for captured request `i` (a turn of the main conversation). */
function job(i: number, session = SESSION, cwd: string | null = CWD): CommitJob {
  return {
    route: "main",
    compaction: isCompaction(requests[i].body.messages),
    sessionDir: session,
    agentDir: null,
    messages: hashMessages(requests[i].body.messages),
    base: { sessionId: session, cwd, gitBranch: null, entrypoint: "cli", version: "0.1.0", isSidechain: false, agentId: null },
    requestTimestamp: new Date().toISOString(),
    answer: null,
    kind: "complete",
  };
}

/** The turns of the capture that the guard sees (the summarising requests are side requests). */
const TURNS = [0, 1, 2, 5, 6];
const FAST: Partial<GuardOptions> = { settleMs: 60, confirmMs: 120, sweepMs: 150 };

describe("the guard on Claude Code's real transcript", { timeout: 60_000 }, () => {
  const scratch = mkdtempSync(`${tmpdir()}/sessiontap-guard-`);
  const claudeDir = `${scratch}/claude`;
  const project = `${claudeDir}/projects/${encodeProjectDir(CWD)}`;
  const path = `${project}/${SESSION}.jsonl`;
  mkdirSync(project, { recursive: true });
  const stderr: string[] = [];
  const events: { action: string; fields: Record<string, unknown> }[] = [];
  let guard: Guard | null = null;

  after(() => {
    guard?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** A fresh guard over the scratch config dir. */
  function start(extra: Partial<GuardOptions> = {}): Guard {
    guard?.stop();
    stderr.length = 0;
    events.length = 0;
    guard = new Guard({
      fs: nodeFs,
      claudeDir,
      clock: Date.now,
      stderr: (l) => stderr.push(l),
      log: (action, fields) => events.push({ action, fields }),
      ...FAST,
      ...extra,
    });
    return guard;
  }

  /** Waits until the guard reached a verdict later than `after` that satisfies `done`. */
  const verdict = (g: Guard, after: number, done: (v: string | null) => boolean, what: string, session = SESSION) =>
    pollAsync(() => g.inspect(session), (s) => s !== null && s.verdictAt > after && done(s.verdict), 10_000, what);

  it("a healthy session raises nothing: every prompt is in the transcript, through a tool call, /compact and a rewind", async () => {
    writeFileSync(path, WHOLE);
    const g = start();
    for (const i of TURNS) g.observe(job(i));
    const observed = Date.now();
    // Wait past the settling time and two sweeps more: nothing may have been raised by then.
    await verdict(g, observed + FAST.settleMs! + FAST.confirmMs! + 2 * FAST.sweepMs!, (v) => v === "ok", "an ok verdict after settling and confirming");
    assert.deepEqual(g.health().alerts, []);
    assert.deepEqual(stderr, []);
    assert.equal(
      g.inspect(SESSION)!.prompts,
      3,
      "three typed prompts expected (tool results and summarising requests hold none; the rewound one is forgotten)",
    );
    assert.equal(g.health().watching, 1);
    assert.deepEqual(g.problems(), []);
  });

  it("deleted between turns: 'missing' within a sweep, one stderr line naming the session and the restore command", async () => {
    const g = start();
    writeFileSync(path, WHOLE);
    for (const i of TURNS.slice(0, 2)) g.observe(job(i));
    await verdict(g, 0, (v) => v === "ok", "the first healthy verdict");
    rmSync(path);
    const alert = await pollAsync(() => g.health().alerts, (a) => a.length === 1, 5_000, "the missing alert");
    assert.equal(alert[0].sessionId, SESSION);
    assert.equal(alert[0].state, "missing");
    assert.equal(alert[0].path, path);
    assert.equal(alert[0].command, `sessiontap restore ${SESSION}`);
    assert.equal(stderr.length, 1);
    assert.match(stderr[0], new RegExp(`^sessiontap: guard: Claude Code's transcript of session ${SESSION} is gone .*sessiontap restore ${SESSION}$`));
    assert.deepEqual(events.filter((e) => e.action === "guard-alert").map((e) => e.fields), [{ session: SESSION, state: "missing" }]);
    assert.deepEqual(g.problems(), [`guard: Claude Code's transcript of ${SESSION} is missing: sessiontap restore ${SESSION}`]);
    // More sweeps and turns: still one line for this state.
    const since = Date.now();
    g.observe(job(1));
    await verdict(g, since + FAST.settleMs! + FAST.sweepMs!, (v) => v === "missing", "later missing verdicts");
    assert.equal(stderr.length, 1, "once per session and state, not once per look or turn");

    // Claude Code starts a fresh file holding only the newest turn: "behind", told once more.
    writeFileSync(path, FRESH);
    g.observe(job(6));
    const behind = await pollAsync(() => g.health().alerts, (a) => a[0]?.state === "behind", 5_000, "the behind alert");
    assert.equal(behind[0].lacking, 2, "the first two prompts are gone (the newest is there)");
    assert.equal(behind[0].command, `sessiontap restore ${SESSION}`, "behind is restored without --force: the file holds nothing the mirror lacks");
    assert.equal(stderr.length, 2);
    assert.match(stderr[1], /is behind the mirror: it lacks 2 prompts the mirror holds.*sessiontap restore \S+$/);

    // Put back whole (as restore does: a new file in its place): cleared, said once.
    writeFileSync(`${path}.new`, WHOLE);
    rmSync(path);
    writeFileSync(path, readFileSync(`${path}.new`));
    rmSync(`${path}.new`);
    await pollAsync(() => g.health().alerts, (a) => a.length === 0, 5_000, "the alert to clear");
    assert.equal(stderr.at(-1), `sessiontap: guard: Claude Code's transcript of session ${SESSION} is whole again`);
    assert.ok(events.some((e) => e.action === "guard-clear"));
  });

  it("cut to a stub (metadata records only, as the stub rewrite leaves it): 'stub'", async () => {
    writeFileSync(path, WHOLE);
    const g = start();
    for (const i of TURNS) g.observe(job(i));
    await verdict(g, 0, (v) => v === "ok", "a healthy verdict");
    writeFileSync(`${path}.tmp`, STUB);
    rmSync(path);
    writeFileSync(path, readFileSync(`${path}.tmp`));
    rmSync(`${path}.tmp`);
    const alert = await pollAsync(() => g.health().alerts, (a) => a.length === 1, 5_000, "the stub alert");
    assert.equal(alert[0].state, "stub");
    assert.equal(stderr.length, 1);
    assert.match(stderr[0], /is a stub/);
  });

  it("cut in place (same file, shorter, then appended to): read afresh, and 'behind'", async () => {
    writeFileSync(path, WHOLE);
    const g = start();
    for (const i of TURNS) g.observe(job(i));
    await verdict(g, 0, (v) => v === "ok", "a healthy verdict");
    writeFileSync(path, FRESH); // truncates the same inode
    const alert = await pollAsync(() => g.health().alerts, (a) => a.length === 1, 5_000, "the behind alert");
    assert.equal(alert[0].state, "behind");
    assert.equal(alert[0].lacking, 2, "the two prompts before the compaction");
  });

  it("restored after a rewind (the abandoned prompt rightly left out): nothing raised, and what was raised cleared", async () => {
    const abandoned = transcript.findIndex((r) => r.type === "user" && r.message?.content === "after compaction message");
    // As restore writes it: records of the conversation only, the current branch only.
    const branch = transcript.filter((r, i) => typeof r.uuid === "string" && !(i >= abandoned && i < LAST_PROMPT_AT));
    assert.ok(!lines(branch).includes('"after compaction message"') && lines(branch).includes('"a different path after rewind"'));
    writeFileSync(path, STUB);
    const g = start();
    for (const i of TURNS) g.observe(job(i));
    await pollAsync(() => g.health().alerts, (a) => a.length === 1 && a[0].state === "stub", 5_000, "the stub alert");
    rmSync(path);
    writeFileSync(path, lines(branch)); // as restore writes it: the current branch only
    await g.lookNow(SESSION);
    assert.deepEqual(g.health().alerts, [], "the restored transcript holds every prompt of the current branch");
    assert.equal(g.inspect(SESSION)!.verdict, "ok");
    assert.ok(stderr.some((l) => /stub/.test(l)) && !stderr.some((l) => /lacks|behind/.test(l)), stderr.join("\n"));
  });

  it("a prompt before a compaction is still expected: a transcript that lost it is behind", async () => {
    const before = transcript.findIndex((r) => r.type === "user" && r.message?.content === "RUNTOOL now please");
    writeFileSync(path, lines(transcript.filter((_, i) => i !== before)));
    const g = start();
    for (const i of TURNS) g.observe(job(i));
    const alert = await pollAsync(() => g.health().alerts, (a) => a.length === 1, 5_000, "the behind alert");
    assert.deepEqual([alert[0].state, alert[0].lacking], ["behind", 1]);
  });

  it("rewritten in place and grown past where it was read (same file, other bytes before the read point): read afresh", async () => {
    writeFileSync(path, WHOLE);
    const g = start();
    for (const i of TURNS) g.observe(job(i));
    await verdict(g, 0, (v) => v === "ok", "a healthy verdict");
    const pad = JSON.stringify({ type: "attachment", attachment: { type: "date", date: "x".repeat(Buffer.byteLength(WHOLE)) } }) + "\n";
    writeFileSync(path, FRESH + pad); // larger than before: only the bytes before the read point tell
    const alert = await pollAsync(() => g.health().alerts, (a) => a.length === 1, 5_000, "the behind alert");
    assert.equal(alert[0].state, "behind");
  });

  it("a transcript never found (persistence off, another config dir) is counted, not alerted", async () => {
    const g = start();
    const other = "0b7c2b53-0000-4000-8000-000000000001";
    g.observe(job(0, other, "/somewhere/else"));
    await pollAsync(() => g.health(), (h) => h.notFound === 1 && h.looks >= 2, 5_000, "two looks that found nothing");
    assert.deepEqual(g.health().alerts, []);
    assert.deepEqual(stderr, []);
    // A commit without a known working directory cannot be placed: nothing is looked at, nothing raised.
    g.observe(job(0, "0b7c2b53-0000-4000-8000-000000000002", null));
    await pollAsync(() => g.inspect("0b7c2b53-0000-4000-8000-000000000002"), (s) => s !== null, 2_000, "the session to be noted");
    assert.equal(g.inspect("0b7c2b53-0000-4000-8000-000000000002")!.path, null);
  });

  it("side requests and subagents are not watched: only the main conversation", async () => {
    const g = start();
    g.observe({ ...job(0, "side-only"), route: "side" });
    g.observe({ ...job(0, "agent-only"), route: "agent", agentDir: "a1" });
    g.observe(job(0, "main-one", "/nowhere"));
    await pollAsync(() => g.inspect("main-one"), (s) => s !== null, 2_000, "the main session to be noted");
    assert.equal(g.inspect("side-only"), null);
    assert.equal(g.inspect("agent-only"), null);
  });

  it("looks are bounded per minute across sessions: the rest wait for the next minute", async () => {
    const g = start({ maxLooksPerMinute: 3 });
    const ids = Array.from({ length: 6 }, (_, i) => `0b7c2b53-0000-4000-8000-00000000010${i}`);
    for (const id of ids) g.observe(job(0, id, "/nowhere"));
    await pollAsync(
      () => ids.map((id) => g.inspect(id)),
      (v) => v.every((s) => s !== null && (s.lastLook > 0 || (s.dueInMs ?? 0) > 50_000)),
      5_000,
      "every session looked at or deferred",
    );
    assert.equal(g.health().looks, 3);
    assert.equal(ids.filter((id) => g.inspect(id)!.lastLook === 0).length, 3, "three wait for the next minute");
  });

  it("reads what changed, bounded per look, from a tail window on a large file; never writes it, never keeps it open", async () => {
    const big = `${project}/0b7c2b53-0000-4000-8000-000000000200.jsonl`;
    const filler = JSON.stringify({ type: "attachment", attachment: { type: "prompt_snapshot", systemPrompt: ["x".repeat(4000)] } }) + "\n";
    writeFileSync(big, filler.repeat(1000) + WHOLE); // ~4 MB of metadata, then the conversation
    const before = statSync(big);
    const g = start({ maxBytesPerLook: 256 * 1024, tailBytes: 1024 * 1024 });
    const id = "0b7c2b53-0000-4000-8000-000000000200";
    for (const i of TURNS) g.observe(job(i, id));
    await verdict(g, 0, (v) => v === "ok", "a verdict once the tail window was read", id);
    const first = g.health().bytesRead;
    const firstLooks = g.health().looks;
    // Each look reads at most 256 KiB (and the 64 bytes before its start); a line cut at a look's end is read again by the next.
    assert.ok(firstLooks >= 4, "the window took several bounded looks");
    assert.ok(first <= firstLooks * (256 * 1024 + 64), `${first} bytes in ${firstLooks} looks`);
    assert.ok(first < 1.25 * 1024 * 1024, `read ${first} bytes of a ${before.size}-byte file: its 1 MiB tail window, not the whole`);
    appendFileSync(big, JSON.stringify({ type: "user", message: { role: "user", content: "appended prompt" }, uuid: "z" }) + "\n");
    const looks = g.health().looks;
    g.observe({ ...job(6, id), messages: hashMessages([{ role: "user", content: "appended prompt" }]) });
    await verdict(g, Date.now() + FAST.settleMs!, (v) => v === "ok", "a verdict after the append", id);
    const delta = g.health().bytesRead - first;
    assert.ok(delta > 0 && delta < 4096, `the next looks read only what was appended (${delta} bytes in ${g.health().looks - looks} looks)`);
    // Claude Code's file: not one byte written, no handle left open by this process.
    assert.equal(readFileSync(big, "utf8").startsWith(filler), true);
    assert.equal(
      statSync(big).size,
      before.size + Buffer.byteLength(JSON.stringify({ type: "user", message: { role: "user", content: "appended prompt" }, uuid: "z" }) + "\n"),
    );
    if (existsSync("/proc/self/fd")) {
      const open = readdirSync("/proc/self/fd").map((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return "";
        }
      });
      assert.ok(!open.some((target) => target.startsWith(claudeDir)), "no file under the Claude Code dir is held open");
    }
  });
});
