// A squatter on the tap's port (docs/RELIABILITY.md "Trust boundaries", issue 32): `sessiontap claude` reuses
// only a tap that proves it is this user's own (an answer to a fresh challenge under the mirror root's key, for
// the address it was asked at), sends nothing of the user's to prove it, and otherwise starts its own tap on a
// free port, saying why. The launcher runs as a child process with a stand-in `claude` (SESSIONTAP_CLAUDE)
// that records its ANTHROPIC_BASE_URL; the squatters are node servers, one of them run as uid 65534.
import { after, afterEach, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import process from "node:process";
import { ROOT, runTap, serveTap, spawnTap, stopAll, type TapChild } from "../support/child.ts";
import { scratchDir } from "../support/recover.ts";

const TOKEN = "the-users-own-tap-token-0123456789";
const API_KEY = "sk-ant-the-users-own-api-key-0123456789";
const SQUATTER = `${ROOT}test/support/squatter.mjs`;

/** Every request a squatter printed. */
const requestsOf = (squatter: TapChild) =>
  squatter.stdout().split("\n").filter((l) => l.startsWith("{")).map((l) =>
    JSON.parse(l) as { url: string; headers: Record<string, string>; answered?: string }
  );

describe("a squatter on the tap's port gets nothing of the user's", { timeout: 60_000 }, () => {
  const scratch = scratchDir("sessiontap-squatter-");
  const root = `${scratch.dir}/mirror`;
  const recorded = `${scratch.dir}/base-url`;
  const claude = `${scratch.dir}/fake-claude`;
  const children: TapChild[] = [];
  before(() => {
    mkdirSync(root, { mode: 0o700 });
    // Claude Code's stand-in: says where it was pointed, then waits when asked to (a session in progress).
    writeFileSync(claude, `#!/bin/sh\nprintf '%s' "$ANTHROPIC_BASE_URL" > "${recorded}"\n[ -n "$FAKE_CLAUDE_WAIT" ] && exec sleep 30\nexit 0\n`);
    chmodSync(claude, 0o755);
  });
  afterEach(() => stopAll(children));
  after(() => scratch.cleanup());

  const squat = async (args: string[], command = ["node", SQUATTER]) => {
    const squatter = spawnTap(args, { command });
    children.push(squatter);
    return { squatter, port: Number((await squatter.waitFor("stdout", /^listening (\d+)$/m))[1]) };
  };
  const launch = (port: number, env: Record<string, string> = {}) =>
    runTap(["claude", "-p", "hello"], {
      env: {
        SESSIONTAP_CLAUDE: claude,
        SESSIONTAP_PORT: String(port),
        SESSIONTAP_MIRROR_DIR: root,
        SESSIONTAP_TOKEN: TOKEN,
        SESSIONTAP_UPSTREAM: "http://127.0.0.1:9",
        ANTHROPIC_API_KEY: API_KEY,
        ...env,
      },
    });
  /** The launcher ran the child against a tap of its own, and the squatter saw nothing of the user's. */
  const refused = (r: { code: number | null; stderr: string }, squatter: TapChild, port: number) => {
    assert.equal(r.code, 0, r.stderr);
    const own = new RegExp(`Claude Code goes through a tap on (http://127\\.0\\.0\\.1:(\\d+)) for this session`).exec(r.stderr);
    assert.ok(own !== null, r.stderr);
    assert.notEqual(Number(own[2]), port);
    assert.equal(readFileSync(recorded, "utf8"), own[1], "the child was pointed at the launcher's own tap");
    const seen = JSON.stringify(requestsOf(squatter));
    assert.ok(requestsOf(squatter).length > 0, "the squatter was asked");
    for (const secret of [TOKEN, API_KEY, "authorization", "x-api-key", "x-sessiontap-token", "cookie"]) {
      assert.ok(!seen.toLowerCase().includes(secret.toLowerCase()), `the squatter got ${secret}: ${seen}`);
    }
  };

  it("a server answering health like a sessiontap is not used; one line says why", async () => {
    const { squatter, port } = await squat(["0", root]);
    const r = await launch(port);
    refused(r, squatter, port);
    assert.match(r.stderr, new RegExp(`^sessiontap: port ${port} is held by something that could not prove it is this user's sessiontap `, "m"));
  });

  it("a squatter that relays the challenge to the user's real tap on another port is refused too", async () => {
    const real = await serveTap(["--mirror-dir", root, "--upstream", "http://127.0.0.1:9"]);
    children.push(real.tap);
    const { squatter, port } = await squat(["0", "--relay", String(real.port)]);
    const r = await launch(port);
    refused(r, squatter, port);
    const proofs = requestsOf(squatter).map((q) => JSON.parse(q.answered ?? "{}").proof).filter((p) => typeof p === "string");
    assert.ok(proofs.length > 0, "the real tap answered the relayed challenge, for its own port");
  });

  it("a squatter run by another local user (uid 65534) is refused", async (t) => {
    if (process.getuid?.() !== 0) return t.skip("only root can run a process as another user here");
    const { squatter, port } = await squat(["0", root], ["runuser", "-u", "nobody", "--", "node", SQUATTER]);
    refused(await launch(port), squatter, port);
  });

  it("the user's own tap on another mirror root, or with its mirror off, is not used either: it cannot prove itself", async () => {
    for (const args of [["--mirror-dir", `${scratch.dir}/elsewhere`], ["--no-mirror"]]) {
      const theirs = await serveTap(args);
      children.push(theirs.tap);
      const r = await launch(theirs.port);
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(`^sessiontap: port ${theirs.port} is held by something that could not prove it is this user's sessiontap \\(a tap with its mirror off`, "m"),
      );
      assert.notEqual(readFileSync(recorded, "utf8"), theirs.url);
    }
  });

  it("the user's own tap on the same root is reused: proven, then asked for its details with the token", async () => {
    const theirs = await serveTap(["--mirror-dir", root, "--upstream", "http://127.0.0.1:9"], { env: { SESSIONTAP_TOKEN: TOKEN } });
    children.push(theirs.tap);
    const r = await launch(theirs.port);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`^sessiontap: Claude Code goes through the tap already running on ${theirs.url} \\(pid ${theirs.tap.child.pid}, `, "m"));
    assert.equal(readFileSync(recorded, "utf8"), theirs.url);
  });

  it("a reused tap that stops while a squatter takes its port: Claude Code is stopped, said why, and the squatter got nothing", async () => {
    const theirs = await serveTap(["--mirror-dir", root, "--upstream", "http://127.0.0.1:9"]);
    children.push(theirs.tap);
    const launcher = spawnTap(["claude"], {
      env: { SESSIONTAP_CLAUDE: claude, FAKE_CLAUDE_WAIT: "1", SESSIONTAP_PORT: String(theirs.port), SESSIONTAP_MIRROR_DIR: root, SESSIONTAP_TOKEN: TOKEN },
    });
    children.push(launcher);
    await launcher.waitFor("stderr", /goes through the tap already running/);
    theirs.tap.signal("SIGTERM");
    await theirs.tap.exit(20_000);
    // Bound in this process the moment the port is free: the launcher waits for two missed looks before it takes it.
    const seen: string[] = [];
    const squatter = createServer((req, res) => {
      seen.push(JSON.stringify({ url: req.url, headers: req.headers }));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ status: "ok", runtime: "bun", mirror: { root } }));
    });
    await new Promise<void>((resolve) => squatter.listen(theirs.port, "127.0.0.1", resolve));
    try {
      const exit = await launcher.exit(20_000);
      assert.notEqual(exit.code, 0);
      assert.match(
        launcher.stderr(),
        new RegExp(
          `^sessiontap: the tap on ${theirs.url} stopped and port ${theirs.port} is now held by something that could not prove it is this user's sessiontap`,
          "m",
        ),
      );
      assert.ok(seen.length > 0, "the launcher looked");
      assert.ok(!seen.join().includes(TOKEN) && !/authorization/i.test(seen.join()), seen.join());
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
