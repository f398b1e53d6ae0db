// Smoke test of the compiled executable (issue 2): `node scripts/test.mjs binary` builds dist/sessiontap
// and runs this file with SESSIONTAP_BINARY pointing at it. --version, health, one proxied and mirrored
// stream, SIGTERM → exit 0.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { ROOT, runTap, serveTap } from "../support/child.ts";
import { loadFixture, startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { CLAUDE_NEXT_BIN, describeRun, makeScratch, runClaude } from "../support/claude.ts";
import { startTestTap } from "../support/tap.ts";
import { rec, writeMirror } from "../support/recover.ts";
import { secretSamples } from "../support/secret-samples.ts";

const BINARY = process.env.SESSIONTAP_BINARY ?? "";
const VERSION: string = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).version;
const MS = 30_000;

/** Every mirror file (*.jsonl but the events log) under `dir`. */
function mirrorFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(path).isDirectory()) return mirrorFiles(path);
    return name.endsWith(".jsonl") && name !== "session-mirror-events.jsonl" ? [path] : [];
  });
}

/** The binary under test; fails the calling test with a clear message when there is none. */
function binary(): string {
  assert.ok(BINARY !== "", "SESSIONTAP_BINARY is not set: run `node scripts/test.mjs binary` (builds dist/sessiontap and sets it)");
  assert.ok(existsSync(BINARY), `SESSIONTAP_BINARY=${BINARY} does not exist: build it with \`node scripts/build.mjs\``);
  return BINARY;
}

describe("compiled binary", () => {
  let scratch: string;
  let stub: StubUpstream;
  before(async () => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-smoke-`);
    stub = await startStub();
  });
  after(async () => {
    await stub?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("--version prints the package.json version", { timeout: MS }, async () => {
    const r = await runTap(["--version"], { binary: binary(), env: { HOME: scratch } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `sessiontap ${VERSION}`);
  });

  it("serves: health ok on bun, one stream byte-identical and mirrored, SIGTERM exits 0", { timeout: MS }, async () => {
    const root = `${scratch}/mirror`;
    const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { binary: binary(), env: { HOME: scratch } });
    let signalled = false;
    try {
      const health = await (await fetch(`${url}/_tap/health`)).json();
      assert.equal(health.status, "ok");
      assert.equal(health.version, VERSION);
      assert.equal(health.runtime, "bun");

      const sse = Buffer.from(loadFixture("ts_basic_response"), "utf8");
      const chunks = [sse.subarray(0, 100), sse.subarray(100, 501), sse.subarray(501)];
      stub.enqueue({ kind: "sse", chunks, delayMs: [0, 5, 5] });
      const res = await fetch(`${url}/v1/messages?beta=true`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "sk-smoke", "x-claude-code-session-id": "smoke-session" },
        body: JSON.stringify({ model: "claude-sonnet-4-5", stream: true, max_tokens: 100, messages: [{ role: "user", content: "hello from the smoke test" }] }),
      });
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(sse), "the stream changed on the way through the binary");
      assert.equal(stub.requests.at(-1)!.url, "/v1/messages?beta=true");
    } finally {
      signalled = tap.signal("SIGTERM");
    }
    assert.ok(signalled);
    assert.deepEqual(await tap.exit(), { code: 0, signal: null });

    // The mirror is flushed on the way out, so its file is there now.
    const files = mirrorFiles(root);
    assert.ok(files.length > 0, `no mirror file under ${root}; stderr: ${tap.stderr()}`);
    const records = files.flatMap((f) => readFileSync(f, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)));
    const user = records.find((r) => r.type === "user");
    const assistant = records.find((r) => r.type === "assistant");
    assert.ok(user, "no user record");
    assert.ok(assistant, "no assistant record");
    assert.equal(user.sessionId, "smoke-session");
    assert.equal(assistant.source, "sessiontap");
  });

  it("scan and export carry secretlint inside: a key in the mirror is found, never printed, and redacted from an export", { timeout: MS }, async () => {
    const { secret, line } = secretSamples().find((s) => s.kind === "github-token")!;
    writeMirror(`${scratch}/scan`, "s-1", [rec("user", "u1", null, line, { sessionId: "s-1" })]);
    const r = await runTap(["scan", "--mirror-dir", `${scratch}/scan`, "--claude-dir", `${scratch}/claude`], { binary: binary(), env: { HOME: scratch } });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /^github-token {2}s-1 {2}\S+\.jsonl:1 {2}ghp_…\n$/);
    const out = await runTap(["export", "s-1", "--mirror-dir", `${scratch}/scan`], { binary: binary(), env: { HOME: scratch } });
    assert.ok(!(r.stdout + r.stderr + out.stdout).includes(secret));
    assert.match(out.stdout, /\[REDACTED github-token [0-9a-f]{8}\]/);
  });

  it("drill: a session the real Claude Code made resumes whole through the binary's drill", { timeout: 120_000 }, async () => {
    const scratch = makeScratch();
    try {
      await using tap = await startTestTap(stub.url, {}, {}, scratch.tmp);
      const made = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash"], { baseUrl: tap.url, scratch, bin: CLAUDE_NEXT_BIN });
      assert.equal(made.code, 0, describeRun(made));
      await tap.settled();
      const env = { HOME: scratch.home, SESSIONTAP_CLAUDE: CLAUDE_NEXT_BIN };
      const r = await runTap(["drill", "--mirror-dir", tap.root, "--json"], { binary: binary(), env, timeoutMs: 90_000 });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const [drilled] = JSON.parse(r.stdout);
      assert.equal(drilled.ok, true, drilled.detail);
      assert.equal(drilled.claudeCode, "2.1.332");
    } finally {
      scratch.cleanup();
    }
  });
});
