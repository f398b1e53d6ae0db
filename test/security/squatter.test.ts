// A squatter on the tap's port (docs/RELIABILITY.md "Trust boundaries", issue 32): `sessiontap claude` reuses only a tap
// that proves it is this user's own (an answer to a fresh challenge under the mirror root's key, for the address asked),
// sends nothing of the user's to prove it, points Claude Code at a port of its own, and otherwise starts its own tap on a
// free port, saying why; serve and doctor send a squatter nothing either. The launcher runs as a child process with a
// stand-in `claude` (SESSIONTAP_CLAUDE) that records its ANTHROPIC_BASE_URL and can send requests with the user's key.
import { after, afterEach, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import process from "node:process";
import { ROOT, runTap, serveTap, spawnTap, stopAll, type TapChild } from "../support/child.ts";
import { scratchDir } from "../support/recover.ts";
import { pollUntil } from "../support/poll.ts";

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
  const hold = `${scratch.dir}/hold`;
  const children: TapChild[] = [];
  before(() => {
    mkdirSync(root, { mode: 0o700 });
    // Claude Code's stand-in: says where it was pointed; with FAKE_CLAUDE_SEND, sends a turn with the user's key every 50 ms
    // for that many ms (a session in progress), printing each status, and no turn while the hold file exists; with FAKE_CLAUDE_WAIT, waits.
    writeFileSync(
      claude,
      `#!/usr/bin/env node
const fs = require("node:fs");
const base = process.env.ANTHROPIC_BASE_URL;
fs.writeFileSync(${JSON.stringify(recorded)}, base);
const sending = Number(process.env.FAKE_CLAUDE_SEND || 0);
const until = Date.now() + sending;
const turn = () => fetch(base + "/v1/messages", { method: "POST", headers: { "x-api-key": process.env.ANTHROPIC_API_KEY, "content-type": "application/json" },
  body: JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "hi" }] }) }).then((r) => r.text().then(() => r.status), (e) => "error " + e.message);
(async () => {
  for (let sent = 0; sending > 0 && (sent === 0 || Date.now() < until); sent++) { // one turn at least, however slow the start
    while (fs.existsSync(${JSON.stringify(hold)})) await new Promise((r) => setTimeout(r, 10));
    console.log("status " + (await turn()));
    await new Promise((r) => setTimeout(r, 50));
  }
  if (process.env.FAKE_CLAUDE_WAIT) await new Promise((r) => setTimeout(r, 30000));
})();
`,
    );
    chmodSync(claude, 0o755);
  });
  afterEach(() => {
    rmSync(hold, { force: true });
    return stopAll(children);
  });
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

  it("a squatter that answers slowly is not waited for: a tap on another port, and it got nothing", async () => {
    const { squatter, port } = await squat(["0", "--slow", "3000"]);
    const r = await launch(port);
    refused(r, squatter, port);
    assert.match(r.stderr, new RegExp(`^sessiontap: port ${port} is in use; Claude Code goes through a tap on `, "m"));
  });

  it("a squatter whose answer never ends is read no further than a bound: a tap on another port, and it got nothing", async () => {
    const { squatter, port } = await squat(["0", "--endless"]);
    const r = await launch(port);
    refused(r, squatter, port);
    assert.match(r.stderr, new RegExp(`^sessiontap: port ${port} is in use( by something that is not a sessiontap)?; Claude Code goes through a tap on `, "m"));
    const sent = Number((await squatter.waitFor("stdout", /^sent (\d+)$/m))[1]);
    // What the squatter got out is the launcher's 1 MiB plus what the kernel's loopback buffers absorbed (their maxima: autotuned, they grow under load).
    const bufferMax = (name: string) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, "utf8").trim().split(/\s+/)[2]);
    const bound = 1024 * 1024 + bufferMax("tcp_rmem") + bufferMax("tcp_wmem") + 2 * 64 * 1024; // and a chunk or two in Node.js's own buffer
    assert.ok(sent <= bound, `the launcher read ${sent} bytes of the squatter's answer (bound ${bound})`);
  });

  it("a squatter that replays a proof the user's tap gave on that port before is refused: every challenge is new", async () => {
    const real = await serveTap(["--mirror-dir", root, "--upstream", "http://127.0.0.1:9"]);
    children.push(real.tap);
    const nonce = "0123456789abcdef0123456789abcdef";
    const { proof } = await (await fetch(`${real.url}/_tap/health?challenge=${nonce}`)).json();
    assert.match(proof, /^[0-9a-f]{64}$/, "the real tap proved itself for that nonce");
    real.tap.signal("SIGTERM");
    await real.tap.exit(20_000);
    const { squatter, port } = await squat([String(real.port), "--proof", proof]);
    assert.equal(port, real.port);
    refused(await launch(port), squatter, port);
  });

  it("the user's own tap on the same root is reused, from a port of the launcher's own: proven, then asked for its details with the token", async () => {
    const theirs = await serveTap(["--mirror-dir", root, "--upstream", "http://127.0.0.1:9"], { env: { SESSIONTAP_TOKEN: TOKEN } });
    children.push(theirs.tap);
    const r = await launch(theirs.port, { FAKE_CLAUDE_SEND: "1" });
    assert.equal(r.code, 0, r.stderr);
    const front = new RegExp(
      `^sessiontap: Claude Code goes through the tap already running on ${theirs.url} \\(pid ${theirs.tap.child.pid}, [^)]*\\), from (http://127\\.0\\.0\\.1:(\\d+))$`,
      "m",
    )
      .exec(r.stderr);
    assert.ok(front !== null, r.stderr);
    assert.notEqual(Number(front[2]), theirs.port);
    assert.equal(readFileSync(recorded, "utf8"), front[1], "the child is pointed at the launcher's own port");
    // Their tap answered the turn: its upstream is down, so the 502 names it.
    assert.match(r.stdout, /^status 502$/m);
    await theirs.tap.waitFor("stderr", /upstream 127\.0\.0\.1:9 cannot be reached/);
    assert.doesNotMatch(r.stderr, /for this session|stopped or cannot prove/, "the launcher started no tap of its own");
  });

  it("a reused tap that stops while a squatter takes its port the moment it frees: Claude Code's turns go on through the launcher's own tap, the squatter gets no key", async () => {
    const theirs = await serveTap(["--mirror-dir", root, "--upstream", "http://127.0.0.1:9"]);
    children.push(theirs.tap);
    const launcher = spawnTap(["claude"], {
      env: {
        SESSIONTAP_CLAUDE: claude,
        FAKE_CLAUDE_SEND: "6000",
        SESSIONTAP_PORT: String(theirs.port),
        SESSIONTAP_MIRROR_DIR: root,
        SESSIONTAP_TOKEN: TOKEN,
        SESSIONTAP_UPSTREAM: "http://127.0.0.1:9",
        ANTHROPIC_API_KEY: API_KEY,
      },
    });
    children.push(launcher);
    await launcher.waitFor("stdout", /^status /m);
    // Tries to bind the port every millisecond from before the tap stops: it holds it the moment it is free.
    const seen: string[] = [];
    const squatter: Server = createServer((req, res) => {
      seen.push(JSON.stringify({ url: req.url, headers: req.headers }));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ status: "ok", runtime: "bun", mirror: { root } }));
    });
    let bound = false;
    const bind = () => squatter.listen(theirs.port, "127.0.0.1");
    squatter.on("error", () => setTimeout(bind, 1));
    squatter.on("listening", () => (bound = true));
    // Claude Code's next turn waits until the squatter holds the port: on a loaded machine the launcher could see the tap gone first.
    writeFileSync(hold, "");
    bind();
    theirs.tap.signal("SIGTERM");
    await theirs.tap.exit(20_000);
    await pollUntil(() => bound, (held) => held, 20_000, "the squatter to hold the port");
    rmSync(hold);
    try {
      const exit = await launcher.exit(30_000);
      assert.ok(bound, "the squatter took the port");
      assert.ok(seen.length > 0, "the launcher asked the port for its proof");
      for (const secret of [TOKEN, API_KEY, "x-api-key", "authorization"]) assert.ok(!seen.join().toLowerCase().includes(secret.toLowerCase()), seen.join());
      assert.match(
        launcher.stderr(),
        new RegExp(`the tap on ${theirs.url} stopped or cannot prove it is this user's; Claude Code goes through a tap on http://127`),
      );
      assert.equal(exit.code, 0, launcher.stderr());
      const after = launcher.stdout().split("\n").filter((l) => l.startsWith("status ")).slice(-3);
      assert.deepEqual(after, ["status 502", "status 502", "status 502"], "the last turns were answered, by the launcher's own tap");
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it("a tap on a name (localhost) is never taken as proven: the launcher's child gets an address, never a name another user may answer at", async () => {
    const named = spawnTap(["serve", "--port", "0", "--host", "localhost", "--mirror-dir", root, "--upstream", "http://127.0.0.1:9"]);
    children.push(named);
    const port = Number((await named.waitFor("stdout", /export ANTHROPIC_BASE_URL=http:\/\/localhost:(\d+)\n/))[1]);
    const r = await launch(port, { SESSIONTAP_HOST: "localhost" });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`^sessiontap: port ${port} is held by something that could not prove it is this user's sessiontap`, "m"));
    assert.match(readFileSync(recorded, "utf8"), /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("serve and doctor ask a squatter for its proof and send it no token", async () => {
    const { squatter, port } = await squat(["0", root]);
    const env = { SESSIONTAP_MIRROR_DIR: root, SESSIONTAP_TOKEN: TOKEN };
    const serve = await runTap(["serve", "--port", String(port)], { env });
    assert.equal(serve.code, 2);
    assert.match(
      serve.stderr,
      new RegExp(`^sessiontap: port ${port} on 127\\.0\\.0\\.1 is held by something that could not prove it is this user's sessiontap`),
    );
    const doctor = await runTap(["doctor", "--port", String(port)], { env });
    assert.equal(doctor.code, 1);
    assert.match(doctor.stdout, /FAIL {2}tap .*could not prove it is this user's tap mirroring to .*; doctor sent it no token/);
    const seen = JSON.stringify(requestsOf(squatter));
    assert.ok(requestsOf(squatter).length >= 2, seen);
    assert.ok(!seen.includes(TOKEN) && !/authorization/i.test(seen), seen);
  });
});
