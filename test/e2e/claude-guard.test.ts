// The guard with the real interactive Claude Code CLI through a tap (stub upstream), driven in a terminal: two turns, then
// Claude Code's transcript deleted (2.1.332) or cut to a stub (2.1.328), then a third turn — within 15 s the tap's stderr
// names the session and `sessiontap restore`, /_tap/health lists the alert, the events log has `guard-alert`; every
// reader (list, show, the viewer's API, doctor) says "behind" as the guard does, and restore without --force puts it
// back, Claude Code's file beside it. A full session with a tool call, a subagent, Claude Code's title request, /compact
// and a rewind raises no alert. Then restore: the subagent goes where Claude Code keeps it, `claude --resume` shows the
// first typed prompt and no <system-reminder>, and `claude -p --resume` sends the same history. Every wait polls, bounded.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { RecordedRequest, StubUpstream } from "../support/stub-upstream.ts";
import { readEvents, readTree, type TapOptions, type TestTap, withTap } from "../support/tap.ts";
import {
  CLAUDE_BIN,
  CLAUDE_NEXT_BIN,
  claudeEnv,
  describeRun,
  findTranscripts,
  makeScratch,
  pollUntil,
  readJsonl,
  type Rec,
  runClaude,
  type Scratch,
} from "../support/claude.ts";
import { pollAsync } from "../support/poll.ts";
import { cli } from "../support/recover.ts";
import { driveOnce } from "../support/scenario.ts";
import { claudeInput, openRewindList, TerminalSession } from "../support/terminal.ts";

const bodyOf = (r: RecordedRequest): Rec => JSON.parse(Buffer.from(r.body).toString("utf8"));
const isMessages = (r: RecordedRequest) => r.url.split("?")[0] === "/v1/messages";
/** Requests of the agent's own turns (its tool set, no agent id): not titles, summaries or subagents. */
const mainTurns = (stub: StubUpstream) =>
  stub.requests.filter((r) => isMessages(r) && !r.headers["x-claude-code-agent-id"] && (bodyOf(r).tools ?? []).length > 8);
const lastUserText = (body: Rec): string => {
  const last = (body.messages as Rec[]).filter((m) => m.role === "user").at(-1);
  const content = last?.content;
  return typeof content === "string" ? content : ((content ?? []) as Rec[]).filter((b) => b.type === "text").at(-1)?.text ?? "";
};
/** A request's conversation as the model gets it: no role:"system" entries, no cache markers. */
const conversation = (body: Rec) =>
  (body.messages as Rec[]).filter((m) => m.role !== "system").map((m) => ({
    role: m.role,
    content: (typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as Rec[])).map(({ cache_control: _c, ...b }) => b),
  }));

/** What the stub was asked, one short line each (for a failure's message). */
function requestsSeen(stub: StubUpstream | undefined): string {
  return JSON.stringify(
    (stub?.requests ?? []).filter(isMessages).map((r) => {
      const body = bodyOf(r);
      return `${r.headers["x-claude-code-agent-id"] ? "agent " : ""}tools=${(body.tools ?? []).length} ${lastUserText(body).slice(0, 40)}`;
    }),
  );
}

/**
 * One tap with the guard on, watching this scratch HOME's Claude Code dir. Its sweep (a look at recently
 * active sessions without a turn) runs every 2 s instead of 10, so a loss between turns shows sooner.
 */
function guarded(scratch: Scratch): TapOptions {
  return { env: { SESSIONTAP_GUARD: "on", CLAUDE_CONFIG_DIR: join(scratch.home, ".claude") }, deps: { guard: { sweepMs: 2_000 } } };
}

/** The interactive CLI in a terminal, past its first-run question; `say` types a prompt and waits for its answer. */
async function interactive(stub: StubUpstream, tap: TestTap, scratch: Scratch, args: string[], env: Record<string, string> = {}, bin = CLAUDE_BIN) {
  writeFileSync(
    join(scratch.home, ".claude.json"),
    JSON.stringify({ hasCompletedOnboarding: true, projects: { [scratch.project]: { hasTrustDialogAccepted: true } } }),
  );
  const term = await TerminalSession.start({
    command: [bin, ...args],
    cwd: scratch.project,
    env: { ...claudeEnv(tap.url, scratch), ...env },
    width: 200,
    height: 50,
  });
  const idle = (s: string) => claudeInput(s) === "" && !/esc to interrupt/i.test(s);
  const say = async (prompt: string) => {
    await term.waitFor("an empty, idle prompt", idle);
    const before = stub.requests.length;
    await term.type(prompt);
    await term.waitFor(`"${prompt}" in the input box`, (s: string) => claudeInput(s) === prompt, 5_000);
    await term.press("Enter");
    await term.waitFor(
      `the answer to "${prompt}"`,
      (s: string) => [...s.matchAll(/Done \(reply (\d+)\)\./g)].some((m) => Number(m[1]) > before) && idle(s),
      30_000,
    );
  };
  const quit = async () => {
    await term.press("C-c");
    await term.waitFor("the exit hint", /Press Ctrl-C again to exit/, 5_000);
    await term.press("C-c");
    await term.waitForExit(10_000);
  };
  await term.waitFor("the API key question", /Do you want to use this API key\?/, 30_000);
  await term.press("Up");
  await term.waitFor("Yes selected", /❯ Yes/, 5_000);
  await term.press("Enter");
  return { term, idle, say, quit };
}

/** Claude Code's transcript of `sessionId` under the scratch HOME. */
function transcriptOf(scratch: Scratch, sessionId: string): string {
  const [path] = findTranscripts(scratch.home).filter((p) => basename(p) === `${sessionId}.jsonl`);
  assert.ok(path, `Claude Code's transcript of ${sessionId}: ${JSON.stringify(findTranscripts(scratch.home))}`);
  return path;
}

/** Waits until the guard judged `sessionId` healthy after `since` (it has read the file and found every prompt). */
async function judgedHealthy(tap: TestTap, sessionId: string, since: number): Promise<void> {
  await pollAsync(
    () => tap.engine!.query("guard.inspect", sessionId),
    (s) => s !== null && s.verdictAt > since && s.verdict === "ok",
    20_000,
    `a healthy verdict on ${sessionId}`,
  );
}

/** The tap's stderr lines naming the session and the restore command, once there are `n` of them (within 15 s). */
async function alertLines(tap: TestTap, sessionId: string, n: number): Promise<string[]> {
  return await pollUntil(
    () => tap.stderrLines.filter((l) => l.includes(sessionId) && l.includes(`sessiontap restore ${sessionId}`)),
    (l) => l.length >= n,
    15_000,
    `the guard's stderr line ${n}`,
  );
}

describe("the guard with the real interactive Claude Code CLI", { timeout: 300_000 }, () => {
  describe("a full, healthy session raises no alert; its restore is the one Claude Code resumes", () => {
    let stub: StubUpstream;
    let tap: TestTap;
    let scratch: Scratch;
    let sessionId = "";
    let ccAgentFiles: string[] = [];
    let lastTurn: Rec = {};

    before(() => void (scratch = makeScratch()));
    withTap((started) => ({ stub, tap } = started), () => guarded(scratch));
    const ran = driveOnce(async () => {
      stub.setDefault({ kind: "conversation", summaries: true });
      // Claude Code names a session only when its "nonessential" traffic is allowed; telemetry and the like stay off.
      const env = { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "", DISABLE_TELEMETRY: "1", DISABLE_ERROR_REPORTING: "1", DISABLE_AUTOUPDATER: "1" };
      const { term, idle, say, quit } = await interactive(stub, tap, scratch, ["--allowedTools", "Bash,Agent", "--permission-mode", "default"], env);
      try {
        await say("hello guarded world");
        await say("RUNTOOL now please");
        await term.waitFor("the tool's output", /hi-from-tool|Ran 1 shell command/, 5_000);
        await say("RUNAGENT please");
        // The subagent runs in the background; its result comes back as a task notification, answered by another turn.
        await pollUntil(
          () =>
            mainTurns(stub).filter((r) => JSON.stringify((bodyOf(r).messages as Rec[]).filter((m) => m.role === "user").at(-1)).includes("<task-notification>"))
              .length,
          (n) => n > 0,
          30_000,
          "the subagent's notification turn",
        );
        await term.waitFor(
          "the notification's answer",
          (s: string) => idle(s) && [...s.matchAll(/Done \(reply (\d+)\)\./g)].some((m) => Number(m[1]) >= stub.requests.length),
          30_000,
        );
        await term.waitFor("an empty, idle prompt", idle);
        await term.type("/compact");
        await term.waitFor("the /compact completion", (s: string) => claudeInput(s) === "/compact" && /Free up context/.test(s), 5_000);
        await term.press("Enter");
        await term.waitFor("the compaction", /Compacted \(ctrl\+o to see full summary\)/, 20_000);
        await say("after compaction message");
        await term.waitFor("an empty, idle prompt", idle);
        await openRewindList(term);
        await term.press("Up");
        await term.waitFor(`"after compaction message" selected`, /^\s+❯ after compaction message\s*$/m, 5_000);
        await term.press("Enter");
        await term.waitFor("the restore options", /❯ 1\. Restore conversation/, 5_000);
        await term.press("Enter");
        await term.waitFor("the rewound prompt back in the input box", (s: string) => claudeInput(s) === "after compaction message", 5_000);
        await term.press("C-u");
        await say("a different path after rewind");
        sessionId = mainTurns(stub)[0].headers["x-claude-code-session-id"];
        // The guard reads Claude Code's file a little after each turn and on its sweeps; let it judge after the last turn.
        await judgedHealthy(tap, sessionId, Date.now() + 4_000);
        lastTurn = bodyOf(mainTurns(stub).at(-1)!);
        await quit();
      } finally {
        term.kill();
      }
      const project = dirname(transcriptOf(scratch, sessionId));
      ccAgentFiles = existsSync(join(project, sessionId, "subagents"))
        ? readdirSync(join(project, sessionId, "subagents")).filter((n) => n.endsWith(".jsonl")).sort()
        : [];
    }, () => `requests: ${requestsSeen(stub)}`);

    after(() => {
      scratch?.cleanup();
    });

    it("the session had everything: a title request, a tool call, a subagent, a compaction and a rewind", () => {
      ran();
      const tree = [...readTree(tap.root).keys()];
      assert.ok(tree.some((p) => p.startsWith(`${sessionId}/subagents/agent-`)), `a subagent mirrored: ${tree}`);
      const side = [...readTree(tap.root).entries()].filter(([p]) => p.startsWith(`${sessionId}/side/`)).flatMap(([, r]) => r) as Rec[];
      assert.ok(
        side.some((r) => r.type === "user" && JSON.stringify(r.message.content).includes("<session>\\nhello guarded world")),
        "Claude Code's title request, in side/",
      );
      assert.ok(
        side.some((r) => r.type === "user" && JSON.stringify(r.message.content).includes("CRITICAL: Respond with TEXT ONLY")),
        "the summarising request, in side/",
      );
      assert.equal(ccAgentFiles.length, 1, "Claude Code kept the subagent's transcript under <session>/subagents/");
    });

    it("no alert: no stderr line, nothing under health's guard.alerts, no guard-alert event, health ok", async () => {
      ran();
      assert.deepEqual(tap.stderrLines.filter((l) => l.includes("guard")), []);
      const health = await (await fetch(`${tap.url}/_tap/health`)).json();
      assert.deepEqual(health.guard.alerts, []);
      assert.equal(health.guard.watching, 1);
      assert.equal(health.status, "ok", JSON.stringify(health.problems));
      assert.deepEqual(readEvents(tap.root).filter((e) => String(e.action).startsWith("guard")), []);
    });

    it("restore puts back the transcript, the subagent where Claude Code keeps it, and the title", async () => {
      ran();
      const path = transcriptOf(scratch, sessionId);
      const project = dirname(path);
      const title = readJsonl(path).find((r) => r.type === "ai-title")?.aiTitle;
      assert.match(String(title), /^Stub title \(reply \d+\)$/, "Claude Code took the stub's title");
      rmSync(path);
      rmSync(join(project, sessionId), { recursive: true, force: true });
      const out = await cli(["restore", sessionId, "--mirror-dir", tap.root], {}, { home: scratch.home, cwd: scratch.project });
      assert.equal(out.code, 0, out.stderr);
      assert.deepEqual(readdirSync(join(project, sessionId, "subagents")).sort(), ccAgentFiles, "the same file name Claude Code used");
      const agent = readJsonl(join(project, sessionId, "subagents", ccAgentFiles[0]));
      assert.ok(agent.some((r) => r.type === "assistant") && agent.every((r) => r.isSidechain === true && r.sessionId === sessionId));
      assert.equal(readJsonl(path)[0].aiTitle, title);
    });

    it("after restoring this rewound, compacted session the guard and doctor raise nothing: the rewound prompt is not expected", async () => {
      ran();
      await judgedHealthy(tap, sessionId, Date.now());
      const health = await (await fetch(`${tap.url}/_tap/health`)).json();
      assert.deepEqual(health.guard.alerts, [], JSON.stringify(health.guard.alerts));
      const doctor = await cli(["doctor", "--mirror-dir", tap.root, "--url", tap.url, "--json"], {}, { home: scratch.home, cwd: scratch.project });
      const checks = JSON.parse(doctor.stdout) as Rec[];
      assert.deepEqual(checks.filter((c) => c.check === "transcripts" && c.status !== "ok").map((c) => c.detail), []);
      assert.ok(!checks.some((c) => /guard/.test(String(c.check)) && c.status === "fail"), JSON.stringify(checks));
    });

    it("`claude -p --resume` sends the model the same history it was last sent, injected context included, byte for byte", async () => {
      ran();
      const from = stub.requests.length;
      const run = await runClaude(["-p", "--resume", sessionId, "one more after restore"], { baseUrl: tap.url, scratch });
      assert.equal(run.code, 0, describeRun(run));
      const resumed = mainTurns({ ...stub, requests: stub.requests.slice(from) } as StubUpstream).at(-1);
      assert.ok(resumed, "a resumed turn");
      const before = conversation(lastTurn);
      assert.deepEqual(conversation(bodyOf(resumed)).slice(0, before.length), before);
    });
  });

  // The deletion as a new user met it (Claude Code 2.1.332); the stub rewrite with 2.1.328.
  for (const [loss, bin, version] of [["deleted", CLAUDE_NEXT_BIN, "2.1.332"], ["cut to a stub", CLAUDE_BIN, "2.1.328"]] as const) {
    describe(`Claude Code ${version}: two turns, its transcript ${loss}, a third turn: the guard says so within 15 s`, () => {
      let stub: StubUpstream;
      let tap: TestTap;
      let scratch: Scratch;
      let sessionId = "";
      let lines: string[] = [];
      let between = ""; // the alert's state before the third turn
      const PROMPTS = ["first guarded prompt", "second guarded prompt", "third guarded prompt"];
      const lost = loss === "deleted" ? "missing" : "stub";

      before(() => void (scratch = makeScratch()));
      withTap((started) => ({ stub, tap } = started), () => guarded(scratch));
      const ran = driveOnce(async () => {
        const { term, say, quit } = await interactive(stub, tap, scratch, ["--allowedTools", "Bash"], {}, bin);
        try {
          await say(PROMPTS[0]);
          await say(PROMPTS[1]);
          sessionId = mainTurns(stub)[0].headers["x-claude-code-session-id"];
          await judgedHealthy(tap, sessionId, 0);
          const path = transcriptOf(scratch, sessionId);
          // Claude Code writes an answer's record after it has shown it: cut the file only once both answers are in,
          // or the second lands in the stub afterwards and the guard rightly reads it as behind, not a stub.
          const answers = (recs: Rec[]) => recs.filter((r) => r.type === "assistant" && JSON.stringify(r.message?.content).includes("Done (reply"));
          await pollUntil(() => readJsonl(path), (recs) => answers(recs).length >= 2, 10_000, "both answers in Claude Code's transcript");
          if (loss === "deleted") rmSync(path);
          else writeFileSync(path, readJsonl(path).filter((r) => r.type !== "user" && r.type !== "assistant").map((r) => JSON.stringify(r) + "\n").join(""));
          // Between turns, the guard's sweep notices on its own.
          between = (await pollAsync(() => tap.alertOf(sessionId), (a) => a !== null, 15_000, "the alert between turns"))!.state;
          await alertLines(tap, sessionId, 1);
          // The third turn: Claude Code writes it to a file that lacks the first two prompts.
          await say(PROMPTS[2]);
          lines = await alertLines(tap, sessionId, 2);
          await quit();
        } finally {
          term.kill();
        }
      }, () => `stderr: ${JSON.stringify(tap?.stderrLines)}`);

      after(() => {
        scratch?.cleanup();
      });

      it(`between turns: '${lost}', one stderr line naming the session and the restore command`, () => {
        ran();
        assert.equal(between, lost);
        const what = loss === "deleted" ? "is gone" : "is a stub";
        assert.match(
          lines[0],
          new RegExp(
            `^sessiontap: guard: Claude Code's transcript of session ${sessionId} ${what} .*; the mirror holds the conversation: quit Claude Code, then run: sessiontap restore ${sessionId}$`,
          ),
        );
      });

      it("after the third turn, within 15 s: 'behind' (the fresh file lacks the first two turns), one more line", () => {
        ran();
        assert.match(
          lines[1],
          new RegExp(
            `^sessiontap: guard: Claude Code's transcript of session ${sessionId} is behind the mirror: it lacks 2 prompts and 2 answers the mirror holds .*: sessiontap restore ${sessionId}$`,
          ),
        );
        assert.equal(tap.stderrLines.filter((l) => l.includes(sessionId)).length, 2, "once per session and state, not once per turn or look");
      });

      it("/_tap/health lists the alert under guard.alerts and as a problem; the tap reads degraded", async () => {
        ran();
        const health = await (await fetch(`${tap.url}/_tap/health`)).json();
        const alert = health.guard.alerts.find((a: Rec) => a.sessionId === sessionId);
        assert.ok(alert, JSON.stringify(health.guard));
        assert.equal(alert.state, "behind");
        assert.deepEqual([alert.lacking, alert.lackingAnswers], [2, 2]);
        assert.ok(!Number.isNaN(Date.parse(alert.since)));
        assert.equal(health.status, "degraded");
        assert.ok(
          health.problems.some((p: string) => p.startsWith("guard: ") && p.includes(`sessiontap restore ${sessionId}`)),
          JSON.stringify(health.problems),
        );
      });

      it("the events log has a guard-alert entry for the session", () => {
        ran();
        const alerts = readEvents(tap.root).filter((e) => e.action === "guard-alert" && e.session === sessionId);
        assert.deepEqual(alerts.map((e) => e.state), [lost, "behind"], JSON.stringify(readEvents(tap.root).slice(-5)));
      });

      it("every reader says what the guard says, behind: list (and --json), show (and --json), the viewer's API, doctor", async () => {
        ran();
        const at = { home: scratch.home, cwd: scratch.project };
        const mirror = ["--mirror-dir", tap.root];
        const listed = JSON.parse((await cli(["list", "--json", ...mirror], {}, at)).stdout).find((s: Rec) => s.sessionId === sessionId);
        assert.deepEqual([listed.claudeTranscript, listed.claudeTranscriptLacking], ["behind", { prompts: 2, answers: 2 }]);
        const table = (await cli(["list", ...mirror], {}, at)).stdout;
        assert.match(table, new RegExp(`^${sessionId} .* behind +\\S`, "m"));
        assert.match(table, new RegExp(`^  sessiontap restore ${sessionId}$`, "m"), "the footer's restore command, without --force");
        const shown = await cli(["show", sessionId, ...mirror], {}, at);
        assert.match(shown.stdout, /^Claude +behind \(lacks 2 prompts and 2 answers of the mirror's current branch\) /m);
        assert.match(shown.stdout, new RegExp(`^Restore +sessiontap restore ${sessionId}$`, "m"));
        assert.equal(JSON.parse((await cli(["show", sessionId, "--json", ...mirror], {}, at)).stdout).claudeTranscript, "behind");
        const api = await (await fetch(`${tap.url}/_tap/api/sessions`)).json();
        assert.equal(api.find((s: Rec) => s.sessionId === sessionId).claudeTranscript, "behind");
        assert.equal((await (await fetch(`${tap.url}/_tap/api/sessions/${sessionId}`)).json()).session.claudeTranscript, "behind");
        // doctor of this tap: its guard's alert, as a failed check; of no tap: its own look, the same state.
        const withTap = JSON.parse((await cli(["doctor", "--json", ...mirror, "--url", tap.url], {}, at)).stdout) as Rec[];
        assert.ok(
          withTap.some((c) => c.status === "fail" && /behind the mirror/.test(c.detail) && c.detail.endsWith(`sessiontap restore ${sessionId}`)),
          JSON.stringify(withTap),
        );
        const alone = JSON.parse((await cli(["doctor", "--json", ...mirror, "--url", "http://127.0.0.1:9"], {}, at)).stdout) as Rec[];
        const check = alone.find((c) => c.check === "transcripts");
        assert.equal(check?.status, "fail", JSON.stringify(alone));
        assert.match(check.detail, /is behind the mirror: it lacks 2 prompts and 2 answers .*sessiontap restore \S+ \(a backup is kept\)$/);
      });

      it("restored without --force (a backup is kept), `claude --resume` lists it by its last prompt, as Claude Code lists its own, shows the prompts and no <system-reminder>; the guard sees it whole again", async () => {
        ran();
        const path = transcriptOf(scratch, sessionId);
        const out = await cli(["restore", sessionId, "--mirror-dir", tap.root], {}, { home: scratch.home, cwd: scratch.project });
        assert.equal(out.code, 0, out.stderr);
        assert.match(out.stdout, /^ {2}backup {3}\S+\.bak-\d{8}T\d{6}Z \(the transcript \(behind the mirror\) that was there\)$/m);
        assert.ok(readdirSync(dirname(path)).some((n) => n.startsWith(`${basename(path)}.bak-`)), "Claude Code's file kept beside it");
        await pollUntil(
          () => tap.stderrLines.some((l) => l === `sessiontap: guard: Claude Code's transcript of session ${sessionId} is whole again`),
          (ok) => ok,
          15_000,
          "the guard's all-clear",
        );
        const term = await TerminalSession.start({
          command: [bin, "--resume"],
          cwd: scratch.project,
          env: claudeEnv(tap.url, scratch),
          width: 160,
          height: 40,
        });
        try {
          const picker = await term.waitFor("the session in the resume picker", (s: string) => s.includes("Resume session"), 20_000);
          assert.ok(!picker.includes("<system-reminder>"), picker);
          // The line Claude Code keeps for a session is its last prompt (its `last-prompt` record, which restore writes).
          await term.waitFor("the last prompt in the picker", (s: string) => new RegExp(`❯ ${PROMPTS[2]}`).test(s), 10_000);
          await term.press("Enter");
          const screen = await term.waitFor("the resumed conversation", (s: string) => s.includes(`❯ ${PROMPTS[0]}`) && s.includes(PROMPTS[2]), 20_000);
          assert.ok(!screen.includes("<system-reminder>"), screen);
          assert.ok(screen.indexOf(`❯ ${PROMPTS[0]}`) < screen.indexOf(PROMPTS[1]), "the first typed prompt comes first");
        } finally {
          term.kill();
        }
        const from = stub.requests.length;
        const run = await runClaude(["-p", "--resume", sessionId, "fourth, after restore"], { baseUrl: tap.url, scratch, bin });
        assert.equal(run.code, 0, describeRun(run));
        const text = JSON.stringify(bodyOf(stub.requests.slice(from).filter(isMessages).at(-1)!).messages);
        for (const p of [...PROMPTS, "fourth, after restore"]) assert.ok(text.includes(p), `the resumed history has "${p}"`);
      });
    });
  }
});
