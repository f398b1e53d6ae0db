// `sessiontap drill` (issue 29; docs/DESIGN.md "Drill") with the real Claude Code, 2.1.328 and the newest pinned release:
// sessions made through a real tap — a tool call, a compaction, a subagent, the real interactive capture with a tool call,
// /compact and a rewind — all resume whole in both; a Claude Code whose reader loses a line fails exactly that session,
// naming what was lost; the user's Claude Code state is byte-identical afterwards, the upstream sees no request, the
// user's key reaches no child; one session resumes from the PostgreSQL store into a HOME that never saw it; an unknown id
// exits 2; a Claude Code that hangs is killed at the timeout with what it started. Runs under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { startTestTap, type TestTap } from "../support/tap.ts";
import { CLAUDE_BIN, CLAUDE_NEXT_BIN, describeRun, makeScratch, type Rec, runClaude, type Scratch, sessionMirror } from "../support/claude.ts";
import { cli, type CliRun, replayCapture } from "../support/recover.ts";
import { clusterUrl, freshDatabase, type TestDatabase } from "../support/pg.ts";
import { spawnTap } from "../support/child.ts";
import { pollUntil } from "../support/poll.ts";

const USER_KEY = "sk-ant-api03-the-users-own-key-never-for-a-drill";

/** Every file under `dir` with its bytes and mode: the user's Claude Code state, to compare before and after. */
function snapshot(dir: string, out = new Map<string, string>()): Map<string, string> {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const info = statSync(path);
    if (info.isDirectory()) snapshot(path, out.set(path, `dir ${info.mode}`));
    else out.set(path, `${info.mode} ${readFileSync(path).toString("base64")}`);
  }
  return out;
}

/** True while `pid` runs (a zombie waiting for its parent has stopped running). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** A shell script in `dir`, executable. */
function script(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}`);
  chmodSync(path, 0o755);
  return path;
}

/** `sessiontap drill ARGS` as the user runs it: their HOME, their key and base URL in the environment, Claude Code `bin`. */
function drill(args: string[], scratch: Scratch, bin: string, env: Record<string, string> = {}, isTTY = false): Promise<CliRun> {
  const user = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: scratch.home,
    ANTHROPIC_API_KEY: USER_KEY,
    ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
    CLAUDE_CONFIG_DIR: join(scratch.home, ".claude"),
    HTTPS_PROXY: "http://127.0.0.1:9",
    SESSIONTAP_CLAUDE: bin,
  };
  return cli(["drill", ...args], { ...user, ...env }, { home: scratch.home, cwd: scratch.project, isTTY });
}

const parsed = (r: CliRun): Rec[] => JSON.parse(r.stdout);

describe("sessiontap drill with the real Claude Code", { timeout: 900_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  const ids = { tool: "", compact: "", agent: "", rewind: "" };
  let before1: Map<string, string>;
  let project: Map<string, string>;
  let upstreamSeen = 0;

  before(async () => {
    stub = await startStub();
    stub.setDefault({ kind: "conversation", summaries: true });
    scratch = makeScratch();
    tap = await startTestTap(stub.url, {}, {}, scratch.tmp);
    const session = async (bin: string, runs: string[][]) => {
      const from = stub.requests.length;
      let id = "";
      for (const args of runs) {
        const done = await runClaude(id === "" ? args : ["-p", "--resume", id, ...args], { baseUrl: tap.url, scratch, bin, timeoutMs: 120_000 });
        assert.equal(done.code, 0, describeRun(done));
        id ||= stub.requests[from].headers["x-claude-code-session-id"];
      }
      return id;
    };
    ids.tool = await session(CLAUDE_BIN, [["-p", "RUNTOOL please, the LOSSY-TARGET", "--allowedTools", "Bash"], ["a plain follow-up"]]);
    ids.compact = await session(CLAUDE_NEXT_BIN, [["-p", "RUNTOOL please", "--allowedTools", "Bash"], ["/compact"], ["after the compaction"]]);
    ids.agent = await session(CLAUDE_NEXT_BIN, [["-p", "RUNAGENT please"]]);
    ids.rewind = await replayCapture(tap, stub); // the real interactive 2.1.328 capture: a tool call, /compact, a rewind
    await tap.settled();
    before1 = snapshot(scratch.home);
    project = snapshot(scratch.project);
    upstreamSeen = stub.requests.length;
  });
  after(async () => {
    await tap?.close();
    await stub?.close();
    scratch?.cleanup();
  });

  for (const [name, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]]) {
    it(`${name}: every session resumes whole; nothing of the user's is touched, the upstream sees nothing`, async () => {
      const r = await drill(["--mirror-dir", tap.root, "--json", "--jobs", "2"], scratch, bin);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const results = parsed(r);
      assert.deepEqual(results.map((x) => x.sessionId).sort(), Object.values(ids).sort());
      for (const x of results) {
        assert.equal(x.ok, true, JSON.stringify(x));
        assert.equal(x.claudeCode, name);
        assert.equal(x.refused, false);
      }
      const of = (id: string) => results.find((x) => x.sessionId === id)!;
      assert.equal(of(ids.tool).turns, 2);
      assert.equal(of(ids.tool).scratchCwd, false, "run in the session's own directory");
      assert.equal(of(ids.tool).cwd, scratch.project);
      assert.equal(of(ids.rewind).scratchCwd, true, "the capture's directory is gone: a scratch one");
      assert.match(of(ids.rewind).detail, /ran in a scratch directory \(.+ is gone\)/);
      assert.deepEqual(snapshot(scratch.home), before1, "the user's ~/.claude and ~/.claude.json");
      assert.deepEqual(snapshot(scratch.project), project, "the project Claude Code resumed in");
      assert.equal(stub.requests.length, upstreamSeen, "the upstream saw no request");
    });
  }

  it("prints one line per session and a summary; doctor names the last drill", async () => {
    const r = await drill(["--mirror-dir", tap.root, ids.tool.slice(0, 8), ids.agent, "--jobs", "1"], scratch, CLAUDE_NEXT_BIN);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const lines = r.stdout.trim().split("\n");
    assert.match(lines[0], new RegExp(`^ok {4}${ids.tool}  2 turns  .+: \\d+ items resumed in order$`));
    assert.match(lines[1], new RegExp(`^ok {4}${ids.agent}  1 turn  `));
    assert.equal(lines.at(-1), "2 sessions drilled with Claude Code 2.1.332: every one resumed whole.");
    const doctor = await cli(["doctor", "--mirror-dir", tap.root, "--port", "1"], { HOME: scratch.home }, { home: scratch.home, cwd: scratch.project });
    assert.match(doctor.stdout, /^ok +last drill +\d{4}-\d\d-\d\d \d\d:\d\d: 2 of 2 sessions named resumed whole by Claude Code 2\.1\.332$/m);
  });

  it("a Claude Code whose reader loses a line fails exactly that session, naming what was lost; the child gets none of the user's credentials", async () => {
    const dumps = join(scratch.tmp, "env-dumps");
    mkdirSync(dumps);
    // The first prompt: whether Claude Code bridges a record missing from the chain or resumes from the break (both seen), the first thing
    // lost is that prompt.
    const lossy = script(
      scratch.tmp,
      "lossy-claude",
      `id=""; prev=""
for a in "$@"; do [ "$prev" = "--resume" ] && id="$a"; prev="$a"; done
env > "${dumps}/$id"
for f in "$CLAUDE_CONFIG_DIR"/projects/*/"$id".jsonl; do
  n=$(grep -nF -- "LOSSY-TARGET" "$f" | head -1 | cut -d: -f1)
  [ -n "$n" ] && sed -i "\${n}d" "$f"
done
exec "${CLAUDE_NEXT_BIN}" "$@"
`,
    );
    const target = sessionMirror(tap.root, ids.tool).find((x) => x.type === "user" && JSON.stringify(x.message).includes("LOSSY-TARGET"))!.uuid;
    const r = await drill(["--mirror-dir", tap.root], scratch, lossy, {}, true); // on a terminal: a progress bar for the four
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const lines = r.stdout.replaceAll("\r\x1b[K", "\n").split("\n").filter((l) => l !== "" && !l.startsWith("\r["));
    assert.deepEqual(lines.filter((l) => l.startsWith("FAIL")), [
      `FAIL  ${ids.tool}  2 turns  RUNTOOL please, the LOSSY-TARGET: missing prompt from record ${target}, turn 1: "RUNTOOL please, the LOSSY-TARGET"`,
    ]);
    assert.equal(lines.filter((l) => l.startsWith("ok    ")).length, 3);
    assert.match(r.stdout, /\r\[#{7,8}\.{22,23}\] 1\/4/, "the progress bar");
    assert.equal(lines.at(-1), "4 sessions drilled with Claude Code 2.1.332: 3 resumed whole, 1 did not (docs/recovery.md says what a failure means).");
    const env = readFileSync(join(dumps, ids.tool), "utf8");
    assert.ok(!env.includes(USER_KEY), "the user's key reached the child");
    assert.match(env, /^ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:\d+$/m);
    assert.doesNotMatch(env, /^ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:9$/m);
    assert.ok(!env.includes(`HOME=${scratch.home}\n`) && !env.includes(`CLAUDE_CONFIG_DIR=${scratch.home}`), "the user's HOME");
    assert.deepEqual(snapshot(scratch.home), before1);
  });

  it("a Claude Code that refuses the resume fails the session and says it refused", async () => {
    const refuser = script(scratch.tmp, "refusing-claude", `rm -f "$CLAUDE_CONFIG_DIR"/projects/*/*.jsonl\nexec "${CLAUDE_BIN}" "$@"\n`);
    const r = await drill(["--mirror-dir", tap.root, ids.agent, "--json"], scratch, refuser);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const [x] = parsed(r);
    assert.equal(x.refused, true);
    assert.match(x.detail, /^Claude Code refused the resume outright: "No conversation found with session ID: /);
  });

  it("an unknown id is a usage error naming it, exit 2, and nothing runs", async () => {
    const r = await drill(["--mirror-dir", tap.root, ids.tool, "no-such-session"], scratch, "/nonexistent/claude");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /"no-such-session" matches no session/);
    assert.equal(r.stdout, "");
  });

  it("a bad --jobs or an unknown option is a usage error naming it, exit 2, and nothing runs", async () => {
    for (
      const [args, said] of [
        [["--jobs", "0"], "sessiontap: --jobs must be between 1 and 64, got 0\n"],
        [["--jobs", "x"], 'sessiontap: --jobs must be a whole number, got "x"\n'],
        [["--frobnicate"], "sessiontap: unknown option --frobnicate (see sessiontap --help)\n"],
      ]
    ) {
      const r = await drill(["--mirror-dir", tap.root, ...args], scratch, "/nonexistent/claude");
      assert.deepEqual([r.code, r.stderr, r.stdout], [2, said, ""]);
    }
  });

  it("a Claude Code that hangs is killed at the timeout, with everything it started", async () => {
    const pids = join(scratch.tmp, "hang-pids");
    mkdirSync(pids);
    const hang = script(scratch.tmp, "hanging-claude", `sleep 600 &\necho $! > "${pids}/child"\necho $$ > "${pids}/self"\nwait\n`);
    const started = Date.now();
    const r = await drill(["--mirror-dir", tap.root, ids.agent, "--json"], scratch, hang, { SESSIONTAP_DRILL_TIMEOUT_MS: "2000" });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(parsed(r)[0].detail, /^Claude Code did not finish within 2 s and was stopped/);
    assert.ok(Date.now() - started < 60_000);
    for (const name of ["self", "child"]) {
      const pid = Number(readFileSync(join(pids, name), "utf8"));
      assert.equal(running(pid), false, `${name} ${pid} is still running`);
    }
  });

  it("SIGINT stops the drill: each Claude Code running is killed with what it started, its scratch directory removed, exit 1", async () => {
    const pids = join(scratch.tmp, "interrupted-pids");
    mkdirSync(pids);
    const hang = script(scratch.tmp, "hanging-claude-2", `echo "$CLAUDE_CONFIG_DIR" > "${pids}/config"\nsleep 600 &\necho $! > "${pids}/child"\nwait\n`);
    const env = { HOME: scratch.home, SESSIONTAP_CLAUDE: hang };
    const drilling = spawnTap(["drill", "--mirror-dir", tap.root, ids.agent], { env });
    const config = await pollUntil(
      () => existsSync(join(pids, "child")) && readFileSync(join(pids, "config"), "utf8").trim(),
      Boolean,
      30_000,
      "Claude Code started",
    );
    assert.ok(drilling.signal("SIGINT"));
    assert.deepEqual(await drilling.exit(30_000), { code: 1, signal: null });
    assert.match(drilling.stderr(), /^sessiontap: drill stopped by SIGINT after 1 session\n$/);
    assert.match(drilling.stdout(), /^FAIL {2}\S+ {2}1 turn {2}RUNAGENT please: stopped by SIGINT\n$/);
    assert.equal(running(Number(readFileSync(join(pids, "child"), "utf8"))), false, "what Claude Code started");
    assert.equal(existsSync(dirname(String(config))), false, "the scratch directory");
  });

  it("a Claude Code that cannot be started: one line, exit 1", async () => {
    const r = await drill(["--mirror-dir", tap.root, ids.agent], scratch, "/nonexistent/claude");
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^sessiontap: drill: \/nonexistent\/claude could not be started \(ENOENT.*\(SESSIONTAP_CLAUDE\)/);
  });
});

describe("sessiontap drill of sessions made with models whose requests Claude Code builds differently", { timeout: 600_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  const ids = new Map<string, string>();
  // claude-opus-5-5 (the default) and claude-haiku-5-5 interleave role:"system" messages; claude-sonnet-4-5 and claude-3-5-haiku put
  // Claude Code's reminders into the last tool result instead, and the latter sends no thinking and no context management at all.
  const MODELS = ["claude-haiku-5-5", "claude-sonnet-4-5", "claude-3-5-haiku-20241022"];

  before(async () => {
    stub = await startStub();
    scratch = makeScratch();
    tap = await startTestTap(stub.url, {}, {}, scratch.tmp);
    for (const model of MODELS) {
      const from = stub.requests.length;
      const first = await runClaude(["-p", `RUNTOOL with ${model}`, "--allowedTools", "Bash", "--model", model], {
        baseUrl: tap.url,
        scratch,
        timeoutMs: 120_000,
      });
      assert.equal(first.code, 0, describeRun(first));
      const id = stub.requests[from].headers["x-claude-code-session-id"];
      const next = await runClaude(["-p", "--resume", id, "a follow-up", "--model", model], {
        baseUrl: tap.url,
        scratch,
        bin: CLAUDE_NEXT_BIN,
        timeoutMs: 120_000,
      });
      assert.equal(next.code, 0, describeRun(next));
      ids.set(model, id);
    }
    await tap.settled();
  });
  after(async () => {
    await tap?.close();
    await stub?.close();
    scratch?.cleanup();
  });

  for (const [name, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]]) {
    it(`${name}: each resumes whole, in the model it was made with`, async () => {
      const seen = stub.requests.length;
      const r = await drill(["--mirror-dir", tap.root, "--json"], scratch, bin);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const results = parsed(r);
      assert.deepEqual(results.map((x) => x.sessionId).sort(), [...ids.values()].sort());
      for (const x of results) assert.equal(x.ok, true, JSON.stringify(x));
      assert.equal(stub.requests.length, seen, "the upstream saw no request");
    });
  }
});

describe("sessiontap drill from the PostgreSQL store, in a HOME that never saw the session", { timeout: 300_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  let db: TestDatabase;
  let id = "";
  before(async () => {
    db = await freshDatabase("drill", clusterUrl());
    stub = await startStub();
    scratch = makeScratch();
    tap = await startTestTap(stub.url, { SESSIONTAP_STORE: db.url }, {}, scratch.tmp);
    const done = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash"], { baseUrl: tap.url, scratch, bin: CLAUDE_NEXT_BIN, timeoutMs: 120_000 });
    assert.equal(done.code, 0, describeRun(done));
    id = stub.requests[0].headers["x-claude-code-session-id"];
    await tap.settled();
  });
  after(async () => {
    await tap?.close();
    await stub?.close();
    await db?.drop();
    scratch?.cleanup();
  });

  it("resumes whole", async () => {
    const laptop = { ...scratch, home: join(scratch.tmp, "laptop-home") };
    mkdirSync(laptop.home);
    const seen = stub.requests.length;
    const r = await drill(["--store", db.url, "--json"], laptop, CLAUDE_NEXT_BIN);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(parsed(r).map((x) => [x.sessionId, x.ok]), [[id, true]]);
    assert.deepEqual(readdirSync(laptop.home), [], "nothing written to the HOME");
    assert.equal(stub.requests.length, seen);
  });
});
