// `sessiontap claude ARGS…` with the real Claude Code (both pinned releases, through SESSIONTAP_CLAUDE):
// in print mode and in its interactive screen in a pseudo-terminal. The launcher starts a tap of its own
// for the run (the session mirrored, the port closed afterwards), or reuses a sessiontap of this user's already
// serving on the port from a port of its own (test/security/squatter.test.ts: one that cannot prove it is, is not used),
// and goes on through a tap of its own if that one stops while Claude Code runs; Claude Code's exit status
// (a failing run, a signal passed on) is the launcher's own. The launcher runs as a child process: the
// source under the runtime running the tests, or the binary under SESSIONTAP_BINARY.
import { after, afterEach, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import net from "node:net";
import { existsSync } from "node:fs";
import process from "node:process";
import { CLAUDE_BIN, CLAUDE_NEXT_BIN, claudeEnv, makeScratch, type Scratch } from "../support/claude.ts";
import { ROOT, serveTap, stopAll, type TapChild } from "../support/child.ts";
import { startInteractive } from "../support/interactive-claude.ts";
import { pollUntil } from "../support/poll.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { errorJson } from "../support/sse-build.ts";
import { readTree } from "../support/tap.ts";

/** The launcher's command line: the binary, or the source under this runtime (from any working directory). */
function launcherCommand(): string[] {
  if (process.env.SESSIONTAP_BINARY) return [process.env.SESSIONTAP_BINARY, "claude"];
  if (typeof (globalThis as { Bun?: unknown }).Bun !== "undefined") return [process.execPath, "run", `${ROOT}src/main.ts`, "claude"];
  return [process.execPath, "run", "--allow-all", "--unstable-no-legacy-abort", "--config", `${ROOT}deno.json`, `${ROOT}src/main.ts`, "claude"];
}

/** A loopback port nothing listens on (free a moment ago). */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** True when a connection to the port is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(false)));
    socket.once("error", () => resolve(true));
  });
}

/** The environment of a launcher run: Claude Code's test environment and the tap's settings. */
function launcherEnv(scratch: Scratch, port: number, upstream: string, bin: string): Record<string, string> {
  const env = claudeEnv(`http://127.0.0.1:${port}`, scratch);
  for (const k of Object.keys(env)) if (k.startsWith("SESSIONTAP_")) delete env[k];
  return {
    ...env,
    NO_COLOR: "1",
    SESSIONTAP_CLAUDE: bin,
    SESSIONTAP_PORT: String(port),
    SESSIONTAP_UPSTREAM: upstream,
    SESSIONTAP_MIRROR_DIR: `${scratch.home}/mirror`,
  };
}

/** Runs the launcher with `args` in the scratch project to its end; `during` runs once it has started. */
function launch(args: string[], env: Record<string, string>, cwd: string, during?: (child: ChildProcess) => void) {
  const [command, ...lead] = launcherCommand();
  return new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, [...lead, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
    child.stderr!.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("close", (code, signal) => (clearTimeout(timer), resolve({ code, signal, stdout, stderr })));
    during?.(child);
  });
}

/** The typed prompts of every main conversation in a mirror root. */
function mirroredPrompts(root: string): string[] {
  if (!existsSync(root)) return [];
  return [...readTree(root).entries()].filter(([p]) => /^[^/]+\/[^/]+\.jsonl$/.test(p)).flatMap(([, records]) =>
    records.flatMap((r) => {
      const content = (r.message as { content?: unknown } | undefined)?.content;
      const blocks = typeof content === "string" ? [{ type: "text", text: content }] : Array.isArray(content) ? content : [];
      return r.type === "user" ? blocks.filter((b) => b.type === "text" && !String(b.text).startsWith("<")).map((b) => String(b.text)) : [];
    })
  );
}

describe("sessiontap claude: Claude Code with the tap in front", { timeout: 180_000 }, () => {
  let stub: StubUpstream;
  const scratches: Scratch[] = [];
  const taps: TapChild[] = [];
  const scratch = () => {
    const s = makeScratch();
    scratches.push(s);
    return s;
  };
  before(async () => (stub = await startStub()));
  afterEach(() => stopAll(taps));
  after(async () => {
    await stub?.close();
    for (const s of scratches) s.cleanup();
  });

  for (const [release, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]]) {
    it(`claude -p (${release}): a tap of its own for the run; the answer printed, the session mirrored, exit 0, the port closed after`, async () => {
      const s = scratch();
      const port = await freePort();
      const r = await launch(["-p", `hello launcher ${release}`], launcherEnv(s, port, stub.url, bin), s.project);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^Done \(reply \d+\)\.\n$/);
      assert.match(r.stderr, new RegExp(`^sessiontap: Claude Code goes through a tap on http://127\\.0\\.0\\.1:${port} for this session \\(mirror `));
      assert.doesNotMatch(r.stderr, /ANTHROPIC_BASE_URL was/, "the environment's base URL was this tap's own");
      assert.deepEqual(mirroredPrompts(`${s.home}/mirror`), [`hello launcher ${release}`], "mirrored before the launcher exited");
      assert.equal(await refused(port), true, "the tap it started is gone");
    });
  }

  it("a failing claude -p: Claude Code's exit status is the launcher's", async () => {
    const s = scratch();
    stub.setDefault({ kind: "json", status: 400, body: errorJson("invalid_request_error", "the stub refuses this one") });
    const r = await launch(["-p", "refused prompt"], launcherEnv(s, await freePort(), stub.url, CLAUDE_BIN), s.project)
      .finally(() => stub.setDefault({ kind: "conversation" }));
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout + r.stderr, /the stub refuses this one/);
  });

  it("SIGTERM to the launcher is passed on: Claude Code's status for it is the launcher's, and the mirror keeps the prompt", async () => {
    const s = scratch();
    // What Claude Code itself exits with on SIGTERM, waiting on an answer that never ends.
    stub.enqueue({ kind: "stall-after", chunks: [] });
    const before = stub.requests.length;
    const direct = spawn(CLAUDE_BIN, ["-p", "direct and stalled"], { cwd: s.project, env: claudeEnv(stub.url, s), stdio: "ignore" });
    const own = new Promise<{ code: number | null; signal: string | null }>((resolve) => direct.on("close", (code, signal) => resolve({ code, signal })));
    await pollUntil(() => stub.requests.slice(before).some((q) => q.url.startsWith("/v1/messages")), (v) => v, 30_000, "the direct request");
    direct.kill("SIGTERM");
    const itself = await own;

    stub.enqueue({ kind: "stall-after", chunks: [] });
    const seen = stub.requests.length;
    const port = await freePort();
    const r = await launch(["-p", "stalled through the launcher"], launcherEnv(s, port, stub.url, CLAUDE_BIN), s.project, (child) => {
      pollUntil(() => stub.requests.slice(seen).some((q) => q.url.startsWith("/v1/messages")), (v) => v, 30_000, "the launched request")
        // process.kill, not child.kill: Deno's child.kill reports the signal as the cause of exit whatever the child did with it.
        .then(() => process.kill(child.pid!, "SIGTERM"), () => child.kill("SIGKILL"));
    });
    assert.equal(r.code, itself.code ?? 128 + 15, `${r.stderr}; claude itself: ${itself.code}/${itself.signal}`);
    assert.notEqual(r.code, 0);
    assert.deepEqual(mirroredPrompts(`${s.home}/mirror`), ["stalled through the launcher"], "the prompt of the answer cut short is mirrored");
    console.log(`claude itself on SIGTERM: ${JSON.stringify(itself)}; through the launcher: ${r.code}`);
    assert.equal(await refused(port), true);
  });

  it("reuses a sessiontap of this user's serving on the port, one that proves it mirrors to the same root (naming its pid and version); it serves on after", async () => {
    const s = scratch();
    const root = `${s.home}/mirror`;
    const theirs = await serveTap(["--upstream", stub.url, "--mirror-dir", root]);
    taps.push(theirs.tap);
    const r = await launch(["-p", "through their tap"], launcherEnv(s, theirs.port, stub.url, CLAUDE_BIN), s.project);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`already running on http://127\\.0\\.0\\.1:${theirs.port} \\(pid ${theirs.tap.child.pid}, version \\d`));
    const prompts = await pollUntil(() => mirroredPrompts(root), (p) => p.length > 0, 10_000, "their tap's write");
    assert.deepEqual(prompts, ["through their tap"]);
    assert.doesNotMatch(r.stderr, /for this session/, "the launcher started no tap of its own");
    assert.equal((await fetch(`${theirs.url}/_tap/health`)).status, 200, "their tap still serves");
  });

  it("no Claude Code to run: the one line that says so comes first and alone, exit 127, and the launcher's tap is gone", async () => {
    const s = scratch();
    const theirs = await serveTap(["--upstream", stub.url, "--mirror-dir", `${s.home}/mirror`]);
    taps.push(theirs.tap);
    const named = await launch(["-p", "x"], { ...launcherEnv(s, theirs.port, stub.url, CLAUDE_BIN), SESSIONTAP_CLAUDE: `${s.home}/no-such-claude` }, s.project);
    assert.equal(named.code, 127);
    assert.equal(
      named.stderr,
      `sessiontap: ${s.home}/no-such-claude was not found (SESSIONTAP_CLAUDE): install Claude Code (npm i -g @anthropic-ai/claude-code), or name it: SESSIONTAP_CLAUDE=/path/to/claude\n`,
    );
    const port = await freePort();
    const env = { ...launcherEnv(s, port, stub.url, CLAUDE_BIN), PATH: `${s.home}/empty` };
    delete (env as Record<string, string | undefined>).SESSIONTAP_CLAUDE;
    const onPath = await launch(["-p", "x"], env, s.project);
    assert.equal(onPath.code, 127);
    assert.equal(
      onPath.stderr,
      "sessiontap: claude was not found on PATH: install Claude Code (npm i -g @anthropic-ai/claude-code), or name it: SESSIONTAP_CLAUDE=/path/to/claude\n",
    );
    assert.equal(await refused(port), true, "the tap it started for Claude Code is gone");
  });

  it("a port held by something that is not a sessiontap: a tap on another port, said so", async () => {
    const s = scratch();
    const other: Server = createServer((_, res) => res.writeHead(404).end("not a tap"));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const port = (other.address() as net.AddressInfo).port;
      const r = await launch(["-p", "beside another server"], launcherEnv(s, port, stub.url, CLAUDE_BIN), s.project);
      assert.equal(r.code, 0, r.stderr);
      const m = new RegExp(`port ${port} is in use by something that is not a sessiontap; Claude Code goes through a tap on http://127\\.0\\.0\\.1:(\\d+)`)
        .exec(r.stderr);
      assert.ok(m !== null && Number(m[1]) !== port, r.stderr);
      assert.deepEqual(mirroredPrompts(`${s.home}/mirror`), ["beside another server"]);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it("interactive (2.1.332): the terminal is Claude Code's; a reused tap that stops is replaced; quit → exit 0, both turns mirrored", async () => {
    const s = scratch();
    const root = `${s.home}/mirror`;
    const theirs = await serveTap(["--upstream", stub.url, "--mirror-dir", root]);
    taps.push(theirs.tap);
    const [command, ...lead] = launcherCommand();
    const env = launcherEnv(s, theirs.port, stub.url, CLAUDE_NEXT_BIN);
    const cli = await startInteractive(stub, { baseUrl: theirs.url, scratch: s, bin: command, args: lead, env });
    try {
      await cli.say("first through their tap");
      // A resized window reaches Claude Code from the terminal itself: it redraws its input box's rules at the new width.
      await cli.term.resize(120, 40);
      await cli.term.waitFor("the screen redrawn at 120 columns", (screen) => /^─{120}$/m.test(screen) && !/─{121}/.test(screen), 10_000);
      await pollUntil(() => mirroredPrompts(root), (p) => p.includes("first through their tap"), 10_000, "the first turn's write");
      theirs.tap.signal("SIGTERM");
      assert.equal((await theirs.tap.exit(20_000)).code, 0);
      await cli.say("second after the takeover");
      await cli.quit();
      assert.equal(cli.term.exitStatus()?.code, 0);
    } finally {
      cli.term.kill();
    }
    assert.deepEqual(mirroredPrompts(root).sort(), ["first through their tap", "second after the takeover"].sort());
  });
});
