// Loopback is not one user (docs/RELIABILITY.md "Trust boundaries"): any local user read every conversation through the
// viewer's API and could restore, while the files were 0600. Now every /_tap/ route but health's bare status answers the
// tap's own user only: the peer's uid from /proc/net/tcp{,6}, or where that cannot be read, the token in the viewer URL
// the tap prints, exchanged for a cookie. The second user is uid 65534 through runuser (CI runs as root; anywhere else
// this file fails rather than skip), over 127.0.0.1, ::1, ::ffff:127.0.0.1 and localhost, and through the tap's own proxy
// (a tunnel into another of the user's taps came from the owner's uid). Real tap processes (the binary under
// test/binary/security.test.ts), then in-process.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { socketUid } from "../../src/server/request-guard.ts";
import { allowedHosts, isLoopback } from "../../src/viewer/hosts.ts";
import { spawnTap, type TapChild } from "../support/child.ts";
import { cli, rec, writeMirror } from "../support/recover.ts";
import { startTestTap, type TestTap } from "../support/tap.ts";

const MS = 60_000;
const S = "1111bbbb-0000-4000-8000-00000000000a";
const CONVERSATION = [
  rec("user", "u1", null, "the zebra secret", { sessionId: S }),
  rec("assistant", "a1", "u1", [{ type: "text", text: "noted" }], { sessionId: S }),
];

/** What the client prints: each request's status and the start of its body (an event stream is read up to its first event). */
const CLIENT = `const asks = JSON.parse(process.argv[1]);
const http = require("node:http");
const net = require("node:net");
// CONNECT through a proxy, then one GET inside the tunnel: the status of each and what the tunnel answered.
const tunnel = (a) => new Promise((resolve) => {
  const socket = net.connect(a.proxy, "127.0.0.1", () => socket.write("CONNECT " + a.target + " HTTP/1.1\\r\\nhost: " + a.target + "\\r\\n\\r\\n"));
  let text = "";
  let inside = false;
  socket.on("data", (d) => {
    text += d;
    if (!inside && /^HTTP\\/1\\.1 200 /.test(text) && text.includes("\\r\\n\\r\\n")) {
      inside = true;
      socket.write("GET " + a.path + " HTTP/1.1\\r\\nhost: " + a.target + "\\r\\nconnection: close\\r\\n\\r\\n");
    }
  });
  socket.on("close", () => resolve({ status: Number(text.slice(9, 12)), body: text }));
  socket.on("error", () => {});
  setTimeout(() => socket.destroy(), 5000).unref();
});
const one = (a) => a.proxy ? tunnel(a) : new Promise((resolve) => {
  const req = http.request(a.url, { method: a.method, headers: { ...(a.host ? { host: a.host } : {}), ...(a.body ? { "content-type": "application/json" } : {}) } }, (res) => {
    let body = "";
    const done = () => (resolve({ status: res.statusCode, body }), res.destroy());
    res.on("data", (d) => { body += d; if (String(res.headers["content-type"]).includes("event-stream") && body.includes("event:")) done(); });
    res.on("end", done);
  });
  req.on("error", (e) => resolve({ status: -1, body: String(e) }));
  req.end(a.body ?? undefined);
});
(async () => { const out = []; for (const a of asks) out.push(await one(a)); console.log(JSON.stringify(out)); })();`;

type Ask = { url?: string; method?: string; body?: string; host?: string; proxy?: number; target?: string; path?: string };

/** Requests made one after another by `user` (uid 65534 through runuser, which needs root as CI runs; or this process's own user) with Node's client. */
function asUser(user: "nobody" | "owner", asks: Ask[]): Promise<{ status: number; body: string }[]> {
  assert.equal(process.getuid?.(), 0, "acting as a second local user needs root (runuser), as CI runs this suite");
  const argv = ["node", "-e", CLIENT, JSON.stringify(asks.map((a) => ({ method: "GET", ...a })))];
  const [command, ...args] = user === "nobody" ? ["runuser", "-u", "nobody", "--", ...argv] : argv;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: "/", stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${command} exited ${code}: ${err}`))));
  });
}

/** What another user is refused, and the owner given: the list, a search, a session, an export, the page, the live stream, the login link. */
const ROUTES = [
  "/_tap/api/sessions",
  "/_tap/api/search?q=zebra",
  `/_tap/api/sessions/${S}`,
  `/_tap/api/sessions/${S}/export?format=jsonl`,
  "/_tap/",
  `/_tap/api/events?dir=${S}`,
  "/_tap/login?token=guess-guess-guess-guess",
] as const;
const RESTORE = { path: `/_tap/api/sessions/${S}/restore`, method: "POST", body: JSON.stringify({ dryRun: false }) };

/** A real tap (this runtime's, or the binary) listening on `host`, its mirror holding the conversation. */
async function realTap(scratch: string, host: string, extra: string[] = []): Promise<{ tap: TapChild; port: number }> {
  mkdirSync(`${scratch}/mirror`, { recursive: true, mode: 0o700 });
  writeMirror(`${scratch}/mirror`, S, CONVERSATION);
  const args = ["serve", "--port", "0", "--host", host, "--mirror-dir", `${scratch}/mirror`, "--upstream", "http://127.0.0.1:9", ...extra];
  const tap = spawnTap(args, { env: { HOME: scratch, CLAUDE_CONFIG_DIR: `${scratch}/claude`, SESSIONTAP_CA_DIR: `${scratch}/ca` } });
  const m = await tap.waitFor("stdout", /export ANTHROPIC_BASE_URL=http:\/\/\S+:(\d+)\n/);
  return { tap, port: Number(m[1]) };
}

describe("a real tap answers its own user only, on every loopback address", () => {
  const scratches: string[] = [];
  const taps: TapChild[] = [];
  // Each way to reach a tap: the address dialled, whose Host the client names as it is (a mapped address too).
  let ways: { name: string; origin: string; claude: string }[] = [];
  // The first tap's forward proxy, and the port of another tap of the same user it could tunnel into.
  let proxyPort = 0;
  let otherPort = 0;
  before(async () => {
    for (const host of ["127.0.0.1", "::1"]) {
      const scratch = mkdtempSync(`${tmpdir()}/sessiontap-owner-`);
      scratches.push(scratch);
      const { tap, port } = await realTap(scratch, host, host === "::1" ? [] : ["--proxy-port", "0"]);
      taps.push(tap);
      if (host === "::1") otherPort = port;
      else proxyPort = Number((await tap.waitFor("stdout", /proxy {6}http:\/\/127\.0\.0\.1:(\d+)/))[1]);
      const claude = `${scratch}/claude`;
      ways.push(
        ...(host === "::1" ? [{ name: "::1", origin: `http://[::1]:${port}`, claude }] : [
          { name: "127.0.0.1", origin: `http://127.0.0.1:${port}`, claude },
          { name: "::ffff:127.0.0.1", origin: `http://[::ffff:127.0.0.1]:${port}`, claude },
          { name: "localhost", origin: `http://localhost:${port}`, claude },
        ]),
      );
    }
  });
  after(async () => {
    for (const tap of taps) tap.signal("SIGTERM");
    for (const tap of taps) await tap.exit();
    for (const scratch of scratches) rmSync(scratch, { recursive: true, force: true });
    ways = [];
  });

  it("another local user: 403 on every route and the restore, nothing read, nothing written; health is the bare status", { timeout: MS }, async () => {
    const asks = ways.flatMap((w) => [...ROUTES.map((path) => ({ url: `${w.origin}${path}` })), { ...RESTORE, url: `${w.origin}${RESTORE.path}` }]);
    const answers = await asUser("nobody", [...asks, ...ways.map((w) => ({ url: `${w.origin}/_tap/health` }))]);
    for (const [i, ask] of asks.entries()) {
      assert.equal(answers[i].status, 403, `${ask.url}: ${answers[i].body}`);
      assert.doesNotMatch(answers[i].body, /zebra|1111bbbb/, `${ask.url}: nothing read`);
    }
    for (const [i, w] of ways.entries()) {
      const health = answers[asks.length + i];
      assert.equal(health.status, 200, w.name);
      assert.deepEqual(Object.keys(JSON.parse(health.body)), ["status"], w.name);
      assert.ok(!existsSync(w.claude), `${w.name}: Claude Code's dir is untouched`);
    }
    for (const tap of taps) assert.doesNotMatch(tap.stdout(), /token=/, "on Linux the viewer URL needs no token");
  });

  it("another local user gets no tunnel through the tap's proxy to this machine, where another tap would take it for its owner; the owner does", {
    timeout: MS,
  }, async () => {
    const through = { proxy: proxyPort, target: `[::1]:${otherPort}`, path: "/_tap/api/sessions" };
    const [refused] = await asUser("nobody", [through]);
    assert.equal(refused.status, 403, refused.body);
    assert.match(refused.body, /is on this machine: the proxy tunnels there only for its own user's clients/);
    assert.doesNotMatch(refused.body, /zebra|1111bbbb/);
    const [tunnelled] = await asUser("owner", [through]);
    assert.equal(tunnelled.status, 200, tunnelled.body);
    assert.match(tunnelled.body, /HTTP\/1\.1 200 [\s\S]*1111bbbb/, "the owner's own client reaches its own tap");
  });

  it("the owner (this process's user) gets every route, the live stream, health in full, and the restore, with no token", { timeout: MS }, async () => {
    const pages = ROUTES.slice(0, 6);
    const asks = ways.flatMap((w) => [...pages, "/_tap/health"].map((path) => ({ url: `${w.origin}${path}` })));
    const answers = await asUser("owner", asks);
    for (const [i, ask] of asks.entries()) assert.equal(answers[i].status, 200, `${ask.url}: ${answers[i].body}`);
    for (const [i] of ways.entries()) {
      const [, search, , , , events, health] = answers.slice(i * 7, i * 7 + 7);
      assert.match(search.body, /zebra/);
      assert.match(events.body, /^event: ready/m, "the live stream opened");
      assert.ok("runtime" in JSON.parse(health.body));
    }
    for (const w of [ways[0], ways.at(-1)!]) {
      const [restore] = await asUser("owner", [{ ...RESTORE, url: `${w.origin}${RESTORE.path}` }]);
      assert.equal(restore.status, 200, restore.body);
      assert.equal(JSON.parse(restore.body).ok, true);
      assert.deepEqual(readdirSync(`${w.claude}/projects/-work-project`), [`${S}.jsonl`]);
    }
  });
});

describe("where the uid cannot be read, the owner proves itself with the printed viewer URL", () => {
  let dir: string;
  let tap: TestTap;
  before(async () => {
    dir = mkdtempSync(`${tmpdir()}/sessiontap-owner-token-`);
    mkdirSync(`${dir}/mirror`, { mode: 0o700 });
    writeMirror(`${dir}/mirror`, S, CONVERSATION);
    // The kernel's tables where there are none: as on a system without /proc.
    tap = await startTestTap("http://127.0.0.1:9", {}, { procNet: `${dir}/no-proc-here` }, dir);
  });
  after(async () => {
    await tap.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${tap.url}${path}`, { headers, redirect: "manual" });

  it("no cookie: refused, health bare; the viewer URL sets an HttpOnly SameSite=Strict cookie that opens every route", async () => {
    for (const path of ROUTES.slice(0, 4)) {
      const refused = await get(path);
      assert.equal(refused.status, 401, path);
      assert.doesNotMatch(await refused.text(), /zebra/);
    }
    assert.deepEqual(Object.keys(await (await get("/_tap/health")).json()), ["status"]);
    const viewer = new URL(tap.viewer);
    assert.equal(viewer.pathname, "/_tap/login");
    assert.ok(viewer.searchParams.get("token")!.length >= 32);
    const login = await get(`${viewer.pathname}${viewer.search}`);
    assert.equal(login.status, 303);
    const cookie = String(login.headers.get("set-cookie"));
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    const jar = cookie.split(";")[0];
    for (const path of ROUTES.slice(0, 5)) assert.equal((await get(path, { cookie: jar })).status, 200, path);
    assert.ok("runtime" in await (await get("/_tap/health", { cookie: jar })).json());
  });

  it("doctor reads the health details with the token the tap left in the mirror root (0600), and only with it", async () => {
    const tapCheck = async () => {
      const run = await cli(["doctor", "--json", "--url", tap.url, "--mirror-dir", tap.root], { CLAUDE_CONFIG_DIR: `${dir}/claude` });
      return (JSON.parse(run.stdout) as { check: string; status: string; detail: string }[]).find((c) => c.check === "tap")!;
    };
    assert.equal(statSync(`${tap.root}/.tap-token`).mode & 0o777, 0o600);
    assert.equal((await tapCheck()).status, "ok", (await tapCheck()).detail);
    renameSync(`${tap.root}/.tap-token`, `${dir}/elsewhere`);
    assert.match((await tapCheck()).detail, /shows its details only with its token/);
  });
});

describe("the kernel's table of sockets, read (pure)", () => {
  const row = (local: string, remote: string, state: string, uid: number) =>
    `   0: ${local} ${remote} ${state} 00000000:00000000 00:00000000 00000000 ${String(uid).padStart(5)}        0 4242 1 0000000000000000 20 4 0 10 -1`;
  const HEAD = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode";
  const LO = "0100007F";
  const LO6 = "00000000000000000000000001000000";
  const MAPPED = "0000000000000000FFFF00000100007F";
  const peer = { address: "127.0.0.1", port: 0xd4a2 };

  it("the client's end of the connection names its uid; the tap's own end, other ports and TIME_WAIT rows do not", () => {
    const table = [
      HEAD,
      row(`${LO}:1F90`, `${LO}:D4A2`, "01", 0), // the tap's end
      row(`${LO}:D4A2`, `${LO}:1F90`, "01", 1000), // the client's
      row(`${LO}:D4A3`, `${LO}:1F90`, "01", 0), // another client
      row(`${LO}:D4A2`, `${LO}:1F91`, "06", 0), // a TIME_WAIT row of the same port, to another
    ].join("\n");
    assert.equal(socketUid(table, peer, 0x1f90), 1000);
    assert.equal(socketUid(table, { address: "127.0.0.1", port: 0xd4a4 }, 0x1f90), null, "no row: no uid");
    assert.equal(socketUid(row(`${LO}:D4A2`, `${LO}:1F90`, "06", 0), peer, 0x1f90), null, "a TIME_WAIT row is stale");
    assert.equal(socketUid(`${table}\n${row(`${LO}:D4A2`, "0200007F:1F90", "01", 0)}`, peer, 0x1f90), null, "two rows: no answer");
    assert.equal(socketUid(row(`${LO}:D4A2`, "0101A8C0:1F90", "01", 0), peer, 0x1f90), null, "the far end is not loopback");
  });

  it("IPv6, and IPv4-mapped addresses on either side", () => {
    assert.equal(socketUid(row(`${LO6}:D4A2`, `${LO6}:1F90`, "01", 7), { address: "::1", port: 0xd4a2 }, 0x1f90), 7);
    assert.equal(socketUid(row(`${MAPPED}:D4A2`, `${MAPPED}:1F90`, "01", 8), peer, 0x1f90), 8, "a v6 client socket to 127.0.0.1");
    assert.equal(socketUid(row(`${LO}:D4A2`, `${LO}:1F90`, "01", 9), { address: "::ffff:127.0.0.1", port: 0xd4a2 }, 0x1f90), 9, "as a dual-stack tap sees it");
  });
});

describe("an IPv4-mapped loopback address is loopback (pure)", () => {
  it("as typed and as a URL writes it, the mapped address is a loopback host the viewer answers by name; another mapped address is not", () => {
    for (const host of ["::ffff:127.0.0.1", "[::ffff:127.0.0.1]", "::ffff:7f00:1", "[::FFFF:7F00:2]"]) assert.ok(isLoopback(host), host);
    for (const host of ["::ffff:10.0.0.1", "::ffff:a00:1", "::2", "128.0.0.1"]) assert.ok(!isLoopback(host), host);
    const names = allowedHosts("127.0.0.1")!;
    for (const name of ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]"]) assert.ok(names.has(name), name);
    assert.ok(allowedHosts("::ffff:127.0.0.1")!.has("[::ffff:127.0.0.1]"));
  });
});

describe("on IPv6 loopback too, the owner needs no token", () => {
  it("a tap on ::1 reads its client's uid from /proc/net/tcp6", async () => {
    await using tap = await startTestTap("http://127.0.0.1:9", { SESSIONTAP_HOST: "::1" });
    assert.equal(tap.viewer, `${tap.url}/_tap/`);
    assert.equal((await fetch(`${tap.url}/_tap/api/sessions`)).status, 200);
  });
});
