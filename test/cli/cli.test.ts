// The command line as a user runs it (SPEC §2): the tap as a child process of the current runtime (or the
// binary in SESSIONTAP_BINARY): --version, --help, usage errors, later commands, startup block, SIGTERM.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { Buffer } from "node:buffer";
import { connect } from "node:net";
import { ROOT, runTap, serveTap } from "../support/child.ts";
import { startStub, type StubUpstream, textReply } from "../support/stub-upstream.ts";

const VERSION: string = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).version;
const CHILD_MS = 30_000;

/** True when nothing accepts connections on the port any more. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("connect", () => (socket.destroy(), resolve(false)));
    socket.on("error", () => resolve(true));
  });
}

describe("cli", () => {
  let scratch: string;
  let stub: StubUpstream;
  before(async () => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-cli-`);
    stub = await startStub();
  });
  after(async () => {
    await stub?.close();
    rmSync(scratch, { recursive: true, force: true });
  });
  const env = () => ({ HOME: scratch });

  it("--version prints the package.json version", { timeout: CHILD_MS }, async () => {
    for (const args of [["--version"], ["-V"], ["serve", "--version"]]) {
      const r = await runTap(args, { env: env() });
      assert.equal(r.code, 0, `${args}: ${r.stderr}`);
      assert.equal(r.stdout.trim(), `sessiontap ${VERSION}`);
      assert.equal(r.stderr, "");
    }
  });

  it("--help lists every command and every setting of SPEC §2", { timeout: CHILD_MS }, async () => {
    const r = await runTap(["--help"], { env: env() });
    assert.equal(r.code, 0, r.stderr);
    const words = [
      "serve",
      "list",
      "show",
      "export",
      "restore",
      "verify",
      "doctor",
      "--help",
      "--version",
      "--port",
      "SESSIONTAP_PORT",
      "8787",
      "--host",
      "SESSIONTAP_HOST",
      "127.0.0.1",
      "--upstream",
      "SESSIONTAP_UPSTREAM",
      "https://api.anthropic.com",
      "--mirror-dir",
      "SESSIONTAP_MIRROR_DIR",
      "~/.claude/session-mirrors",
      "--no-mirror",
      "SESSIONTAP_MIRROR",
      "SESSIONTAP_MAX_BYTES",
      "104857600",
      "SESSIONTAP_RETENTION_DAYS",
      "0 (off: the mirror keeps every session",
      "SESSIONTAP_MAX_SESSIONS",
      "1024",
      "SESSIONTAP_INCLUDE_THINKING",
      "--claude-dir",
      "CLAUDE_CONFIG_DIR",
      "~/.claude",
      "--store",
      "SESSIONTAP_STORE",
    ];
    for (const word of words) assert.ok(r.stdout.includes(word), `--help does not mention ${word}`);
  });

  const bad: [string, string[], Record<string, string>, RegExp][] = [
    ["--port abc", ["--port", "abc"], {}, /port/],
    ["--port 70000", ["serve", "--port", "70000"], {}, /port/],
    ["--port without a value", ["--port"], {}, /--port/],
    ["SESSIONTAP_PORT=abc", [], { SESSIONTAP_PORT: "abc" }, /SESSIONTAP_PORT/],
    ["SESSIONTAP_UPSTREAM=ftp://x", [], { SESSIONTAP_UPSTREAM: "ftp://x" }, /upstream/i],
    ["--upstream not-a-url", ["--upstream", "not a url"], {}, /upstream/i],
    ["unknown flag", ["--frobnicate"], {}, /--frobnicate/],
    ["unknown command", ["frobnicate"], {}, /frobnicate/],
    ["SESSIONTAP_MIRROR=maybe", [], { SESSIONTAP_MIRROR: "maybe" }, /SESSIONTAP_MIRROR/],
    ["SESSIONTAP_MAX_BYTES=lots", [], { SESSIONTAP_MAX_BYTES: "lots" }, /SESSIONTAP_MAX_BYTES/],
    ["SESSIONTAP_RETENTION_DAYS=-1", [], { SESSIONTAP_RETENTION_DAYS: "-1" }, /SESSIONTAP_RETENTION_DAYS/],
    ["SESSIONTAP_MAX_SESSIONS=0", [], { SESSIONTAP_MAX_SESSIONS: "0" }, /SESSIONTAP_MAX_SESSIONS/],
    ["SESSIONTAP_INCLUDE_THINKING=perhaps", [], { SESSIONTAP_INCLUDE_THINKING: "perhaps" }, /SESSIONTAP_INCLUDE_THINKING/],
  ];
  for (const [label, args, extra, names] of bad) {
    it(`${label}: one line on stderr naming the setting, exit 2`, { timeout: CHILD_MS }, async () => {
      const r = await runTap(args, { env: { ...env(), ...extra } });
      assert.equal(r.code, 2, `exit ${r.code}; stderr: ${r.stderr}`);
      assert.equal(r.stdout, "");
      assert.equal(r.stderr.trimEnd().split("\n").length, 1, `not one line: ${JSON.stringify(r.stderr)}`);
      assert.match(r.stderr, names);
    });
  }

  for (const args of [["list"], ["list", "--json"], ["show", "x"], ["export", "x"], ["restore", "x"], ["verify"], ["doctor"]]) {
    it(`\`${args.join(" ")}\` runs (exit 0 or 1 on an empty mirror, never a usage error)`, { timeout: CHILD_MS }, async () => {
      const claude = args[0] === "export" || args[0] === "verify" ? [] : ["--claude-dir", `${scratch}/no-claude`];
      const r = await runTap([...args, "--mirror-dir", `${scratch}/empty-mirror-${args.join("-")}`, ...claude], { env: env() });
      assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /not yet available/);
    });
  }

  it("--port 0 prints the startup block with the actual port, serves, and exits 0 on SIGINT", { timeout: CHILD_MS }, async () => {
    const mirrorDir = `${scratch}/startup-mirror`;
    const { tap, url, port } = await serveTap(["--upstream", stub.url, "--mirror-dir", mirrorDir], { env: env() });
    try {
      assert.notEqual(port, 0);
      const out = tap.stdout();
      assert.ok(out.includes(`http://127.0.0.1:${port}`), out);
      assert.ok(out.includes(stub.url), `upstream missing: ${out}`);
      assert.ok(out.includes(mirrorDir), `mirror root missing: ${out}`);
      assert.ok(out.includes(`export ANTHROPIC_BASE_URL=http://127.0.0.1:${port}\n`), out);
      const health = await (await fetch(`${url}/_tap/health`)).json();
      assert.equal(health.status, "ok");
      assert.equal(health.version, VERSION);
    } finally {
      tap.signal("SIGINT");
    }
    assert.deepEqual(await tap.exit(), { code: 0, signal: null });
  });

  it("SIGTERM during a stream: stops accepting, lets the stream finish, exits 0", { timeout: CHILD_MS }, async () => {
    const events = textReply("drained to the end", { deltas: 6 });
    stub.enqueue({ kind: "sse", chunks: events, delayMs: events.map((_, i) => (i === 0 ? 0 : 100)) });
    const { tap, url, port } = await serveTap(["--upstream", stub.url, "--mirror-dir", `${scratch}/drain-mirror`], { env: env() });
    let signalled = false;
    try {
      const res = await fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "drain" }] }),
      });
      const reader = res.body!.getReader();
      const parts: Uint8Array[] = [(await reader.read()).value!];
      signalled = tap.signal("SIGTERM");
      await tap.waitFor("stderr", /SIGTERM/);
      assert.equal(await refused(port), true, "still accepting connections after SIGTERM");
      for (let i = 0; i < 1000; i++) {
        const r = await reader.read();
        if (r.done) break;
        parts.push(r.value);
      }
      assert.equal(Buffer.concat(parts).toString("utf8"), events.join(""));
    } finally {
      // A second SIGTERM would (rightly) not wait for the drain; send one only if the test never did.
      if (!signalled) tap.signal("SIGTERM");
    }
    assert.deepEqual(await tap.exit(), { code: 0, signal: null });
  });

  it("SIGTERM with a stream that never ends: the drain is bounded, the client's read fails, exit 0", { timeout: CHILD_MS }, async () => {
    stub.enqueue({ kind: "stall-after", chunks: textReply("never finishes").slice(0, 2) });
    const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", `${scratch}/bounded-mirror`], {
      env: { ...env(), SESSIONTAP_DRAIN_MS: "300" },
    });
    let signalled = false;
    try {
      const res = await fetch(`${url}/v1/messages`, {
        method: "POST",
        body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "stall" }] }),
      });
      const reader = res.body!.getReader();
      await reader.read();
      const started = Date.now();
      signalled = tap.signal("SIGTERM");
      let failed = false;
      for (let i = 0; i < 1000; i++) {
        const r = await reader.read().catch(() => ((failed = true), { done: true }));
        if (r.done) break;
      }
      assert.ok(failed, "the cut stream ended cleanly");
      assert.deepEqual(await tap.exit(10_000), { code: 0, signal: null });
      assert.ok(Date.now() - started < 8000, `exit took ${Date.now() - started} ms`);
    } finally {
      if (!signalled) tap.signal("SIGTERM");
      await tap.exit();
    }
  });
});
