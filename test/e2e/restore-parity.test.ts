// A restored session is the original (issue 20; docs/DESIGN.md "Restore"): the real Claude Code, 2.1.328 and
// the newest pinned release, with two models that put the environment in different places, runs a session
// through a tap; then the same prompt is resumed twice — once from Claude Code's own transcript, once from
// the transcript `sessiontap restore` writes after that one is lost — and the two requests must carry the
// same `messages` (cache_control aside): the same roles, content shapes, environment and injected context,
// once each and where they were. Print-mode sessions with a tool call; interactive ones with a tool call,
// /compact and a rewind; one restored from the PostgreSQL store into a HOME that never saw it; and the
// resumed screen shows the tool's output as the original does. Runs under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { startTestTap, type TestTap } from "../support/tap.ts";
import {
  CLAUDE_BIN,
  CLAUDE_NEXT_BIN,
  claudeEnv,
  describeRun,
  findTranscripts,
  makeScratch,
  type Rec,
  runClaude,
  type Scratch,
  TEST_API_KEY,
} from "../support/claude.ts";
import { cli } from "../support/recover.ts";
import { startInteractive } from "../support/interactive-claude.ts";
import { TerminalSession } from "../support/terminal.ts";
import { clusterUrl, freshDatabase, type TestDatabase } from "../support/pg.ts";

const SONNET = ["--model", "claude-sonnet-4-5"];
/** Each client and model: 2.1.328 sends the environment in a role:"system" message, 2.1.332 with Sonnet 4.5 in a reminder. */
const CLIENTS = [
  { name: "2.1.328", bin: CLAUDE_BIN, model: [] as string[] },
  { name: "2.1.332", bin: CLAUDE_NEXT_BIN, model: [] as string[] },
  { name: "2.1.332 --model claude-sonnet-4-5", bin: CLAUDE_NEXT_BIN, model: SONNET },
];
const RESUMED = "the same prompt, resumed";

/** Drops every `cache_control` key: where Claude Code puts its cache markers is not the conversation. */
function withoutCacheMarkers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCacheMarkers);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => k !== "cache_control").map(([k, v]) => [k, withoutCacheMarkers(v)]));
}

/** The conversation's own requests from request `from` on (not titles, summaries or token counts), bodies parsed. */
function turns(stub: StubUpstream, from: number): Rec[] {
  return stub.requests.slice(from).filter((r) => r.url.split("?")[0] === "/v1/messages").map((r) => JSON.parse(Buffer.from(r.body).toString("utf8")))
    .filter((b) => Array.isArray(b.tools) && b.tools.length > 0 && b.output_config?.format === undefined);
}

/** One client session run through the tap, ready to be resumed both ways. */
interface Ran {
  stub: StubUpstream;
  tap: TestTap;
  scratch: Scratch;
  sessionId: string;
  bin: string;
  model: string[];
}

/** Claude Code's own transcript of the session. */
function ownTranscript(run: Ran, home = run.scratch.home): string {
  const path = findTranscripts(home).find((p) => basename(p) === `${run.sessionId}.jsonl`);
  assert.ok(path, `Claude Code's transcript of ${run.sessionId}`);
  return path;
}

/** Resumes the session with RESUMED (in `home`) and returns the request the client sent for it. */
async function resume(run: Ran, home = run.scratch.home): Promise<Rec> {
  const from = run.stub.requests.length;
  const scratch = { ...run.scratch, home };
  const done = await runClaude(["-p", "--resume", run.sessionId, RESUMED, ...run.model], { baseUrl: run.tap.url, scratch, bin: run.bin });
  assert.equal(done.code, 0, describeRun(done));
  const sent = turns(run.stub, from);
  assert.equal(sent.length, 1, "one request for the resumed turn");
  return sent[0];
}

/**
 * The session resumed from the transcript `sessiontap restore` wrote after Claude Code's was lost, then
 * (Claude Code's own put back) resumed from its own: both requests, in that order.
 */
async function resumeBothWays(run: Ran): Promise<{ restored: Rec; own: Rec }> {
  await run.tap.settled();
  const path = ownTranscript(run);
  const kept = `${run.scratch.tmp}/own-transcript.jsonl`;
  copyFileSync(path, kept);
  rmSync(path); // lost
  const out = await cli(["restore", run.sessionId, "--mirror-dir", run.tap.root], {}, { home: run.scratch.home, cwd: run.scratch.project });
  assert.equal(out.code, 0, out.stderr);
  const restored = await resume(run);
  copyFileSync(kept, path);
  const own = await resume(run);
  return { restored, own };
}

/** Asserts the two requests carry the same conversation, with a readable first difference. */
function assertSameMessages(restored: Rec, own: Rec): void {
  const [a, b] = [withoutCacheMarkers(restored.messages) as Rec[], withoutCacheMarkers(own.messages) as Rec[]];
  const at = a.findIndex((m, i) => JSON.stringify(m) !== JSON.stringify(b[i]));
  assert.deepEqual(a, b, `messages differ from ${at}: restored ${JSON.stringify(a[at])?.slice(0, 400)} vs own ${JSON.stringify(b[at])?.slice(0, 400)}`);
}

/**
 * A stub, a scratch project that is a git repository (the git status and branch travel in a reminder) and
 * a tap in front of the stub (`env` its settings), for `client`; `close` removes all of it.
 */
async function startRun(client: { bin: string; model: string[] }, env: Record<string, string> = {}): Promise<Ran & { close(): Promise<void> }> {
  const stub = await startStub();
  stub.setDefault({ kind: "conversation", summaries: true });
  const scratch = gitScratch();
  const tap = await startTestTap(stub.url, env, {}, scratch.tmp);
  return {
    stub,
    tap,
    scratch,
    sessionId: "",
    bin: client.bin,
    model: client.model,
    async close() {
      await tap.close();
      await stub.close();
      scratch.cleanup();
    },
  };
}

/** A scratch project that is a git repository (the git status and branch travel in a reminder). */
function gitScratch(): Scratch {
  const scratch = makeScratch();
  const git = (...args: string[]) => execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd: scratch.project });
  git("init", "-q", "-b", "main");
  git("commit", "-q", "--allow-empty", "-m", "init");
  return scratch;
}

describe("resuming a restored session sends what resuming the original sends", { timeout: 600_000 }, () => {
  for (const client of CLIENTS) {
    describe(`${client.name}, print mode: a tool call and a follow-up`, () => {
      let run: Awaited<ReturnType<typeof startRun>>;
      let requests: { restored: Rec; own: Rec };
      before(async () => {
        run = await startRun(client);
        const { stub, scratch } = run;
        const opts = { baseUrl: run.tap.url, scratch, bin: client.bin };
        const first = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash", ...client.model], opts);
        assert.equal(first.code, 0, describeRun(first));
        run.sessionId = stub.requests[0].headers["x-claude-code-session-id"];
        const second = await runClaude(["-p", "--resume", run.sessionId, "a plain follow-up", ...client.model], opts);
        assert.equal(second.code, 0, describeRun(second));
        requests = await resumeBothWays(run);
      });
      after(() => run?.close());

      it("the same messages", () => {
        const text = JSON.stringify(requests.own.messages);
        for (const s of ["RUNTOOL please", "hi-from-tool", "a plain follow-up", RESUMED, "Primary working directory", "Current branch: main"]) {
          assert.ok(text.includes(s), `the resumed conversation holds ${s}`);
        }
        assertSameMessages(requests.restored, requests.own);
      });
    });
  }

  for (const client of [CLIENTS[0], CLIENTS[2]]) {
    describe(`${client.name}, interactive: a tool call, /compact and a rewind`, () => {
      let run: Awaited<ReturnType<typeof startRun>>;
      let requests: { restored: Rec; own: Rec };
      before(async () => {
        run = await startRun(client);
        const { stub, scratch } = run;
        const person = await startInteractive(stub, { baseUrl: run.tap.url, scratch, args: ["--allowedTools", "Bash", ...client.model], bin: client.bin });
        try {
          await person.say("hello interactive world");
          await person.say("RUNTOOL now please");
          await person.compact();
          await person.say("after compaction message");
          await person.rewindLast("after compaction message");
          await person.say("a different path after rewind");
          await person.quit();
        } finally {
          person.term.kill();
        }
        run.sessionId = stub.requests[0].headers["x-claude-code-session-id"];
        requests = await resumeBothWays(run);
      });
      after(() => run?.close());

      it("the same messages: the summary, the kept tail, the current branch", () => {
        const text = JSON.stringify(requests.own.messages);
        assert.ok(text.includes("This session is being continued"), "resumed from the compaction");
        assert.ok(text.includes("a different path after rewind") && !text.includes("after compaction message"), "on the current branch");
        assertSameMessages(requests.restored, requests.own);
      });
    });
  }

  describe("restored from the PostgreSQL store into a HOME that never saw the session (another machine)", () => {
    let run: Awaited<ReturnType<typeof startRun>>;
    let db: TestDatabase;
    let restored: Rec;
    let own: Rec;
    before(async () => {
      db = await freshDatabase("restore_parity", clusterUrl());
      run = await startRun(CLIENTS[2], { SESSIONTAP_STORE: db.url });
      const { stub, scratch, tap } = run;
      const first = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash", ...SONNET], { baseUrl: tap.url, scratch, bin: CLAUDE_NEXT_BIN });
      assert.equal(first.code, 0, describeRun(first));
      run.sessionId = stub.requests[0].headers["x-claude-code-session-id"];
      await tap.settled();
      const laptop = join(scratch.tmp, "laptop-home");
      mkdirSync(laptop);
      const out = await cli(["restore", run.sessionId, "--store", db.url], {}, { home: laptop, cwd: scratch.project });
      assert.equal(out.code, 0, out.stderr);
      restored = await resume(run, laptop);
      own = await resume(run);
    });
    after(async () => {
      await run?.close();
      await db?.drop();
    });

    it("the same messages as resuming on the machine it ran on", () => {
      assert.ok(JSON.stringify(own.messages).includes("hi-from-tool"));
      assertSameMessages(restored, own);
    });
  });

  describe("the resumed screen", () => {
    let run: Awaited<ReturnType<typeof startRun>>;
    const screens: string[] = [];
    before(async () => {
      run = await startRun(CLIENTS[1]);
      const { stub, scratch, tap } = run;
      const first = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash"], { baseUrl: tap.url, scratch, bin: CLAUDE_NEXT_BIN });
      assert.equal(first.code, 0, describeRun(first));
      run.sessionId = stub.requests[0].headers["x-claude-code-session-id"];
      await tap.settled();
      const path = ownTranscript(run);
      const own = readFileSync(path, "utf8");
      // A first-run config that trusts the project and has accepted the test key (Claude Code keeps its last 20 characters).
      const config = {
        hasCompletedOnboarding: true,
        projects: { [scratch.project]: { hasTrustDialogAccepted: true } },
        customApiKeyResponses: { approved: [TEST_API_KEY.slice(-20)], rejected: [] },
      };
      writeFileSync(join(scratch.home, ".claude.json"), JSON.stringify(config));
      for (const side of ["own", "restored"]) {
        if (side === "restored") {
          rmSync(path);
          const out = await cli(["restore", run.sessionId, "--mirror-dir", tap.root], {}, { home: scratch.home, cwd: scratch.project });
          assert.equal(out.code, 0, out.stderr);
        } else writeFileSync(path, own);
        const term = await TerminalSession.start({
          command: [CLAUDE_NEXT_BIN, "--resume", run.sessionId],
          cwd: scratch.project,
          env: claudeEnv(tap.url, scratch),
          width: 160,
          height: 50,
        });
        try {
          await term.waitFor("the resumed conversation", /RUNTOOL please[\s\S]*Done \(reply/, 30_000);
          await term.press("C-o"); // the detailed transcript, where each tool call shows its output
          screens.push(await term.waitFor("the detailed transcript", /Showing detailed transcript/, 10_000));
        } finally {
          term.kill();
        }
      }
    });
    after(() => run?.close());

    it("shows the tool call and its output as the original does", () => {
      const shown = (screen: string) => screen.split("\n").filter((l) => /^\s*(●|⎿)/.test(l)).map((l) => l.trim());
      assert.ok(shown(screens[0]).some((l) => /^⎿\s+hi-from-tool$/.test(l)), `the original shows the output:\n${screens[0]}`);
      assert.deepEqual(shown(screens[1]), shown(screens[0]));
    });
  });
});
