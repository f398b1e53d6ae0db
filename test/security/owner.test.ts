// Loopback is not one user (docs/RELIABILITY.md "Trust boundaries"): any local user read every conversation through the
// viewer's API and could restore, while the files were 0600. Now every /_tap/ route but health's bare status answers the
// tap's own user only: the peer's uid from /proc/net/tcp{,6}, or where that cannot be read, the token in the viewer URL
// the tap prints, exchanged for a cookie. The second user is uid 65534 through runuser (CI runs as root; anywhere else
// this file fails rather than skip). A real tap process (the binary under test/binary/security.test.ts), then in-process.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { socketUid } from "../../src/server/request-guard.ts";
import { serveTap, type TapChild } from "../support/child.ts";
import { cli, rec, writeMirror } from "../support/recover.ts";
import { startTestTap, type TestTap } from "../support/tap.ts";

const MS = 60_000;
const S = "1111bbbb-0000-4000-8000-00000000000a";
const CONVERSATION = [
  rec("user", "u1", null, "the zebra secret", { sessionId: S }),
  rec("assistant", "a1", "u1", [{ type: "text", text: "noted" }], { sessionId: S }),
];

/** A request made by uid 65534 with Node's fetch (runuser needs root, as CI runs): its status and body. */
function asNobody(url: string, method = "GET", body = ""): Promise<{ status: number; body: string }> {
  assert.equal(process.getuid?.(), 0, "acting as a second local user needs root (runuser), as CI runs this suite");
  const script = `const [u, m, b] = process.argv.slice(1);
fetch(u, m === "GET" ? {} : { method: m, body: b, headers: { "content-type": "application/json" } })
  .then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.text() })), (e) => { console.error(e); process.exit(3); });`;
  return new Promise((resolve, reject) => {
    const child = spawn("runuser", ["-u", "nobody", "--", "node", "-e", script, url, method, body], { cwd: "/", stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`runuser exited ${code}: ${err}`))));
  });
}

/** What another user is refused, and the owner given. */
const ROUTES = [
  ["GET", "/_tap/api/sessions"],
  ["GET", "/_tap/api/search?q=zebra"],
  ["GET", `/_tap/api/sessions/${S}/export?format=jsonl`],
  ["GET", `/_tap/api/sessions/${S}`],
  ["GET", "/_tap/"],
  ["GET", "/_tap/login?token=guess-guess-guess-guess"],
] as const;

describe("a real tap answers its own user only", () => {
  let scratch: string;
  let tap: TapChild;
  let url: string;
  before(async () => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-owner-`);
    mkdirSync(`${scratch}/mirror`, { mode: 0o700 });
    writeMirror(`${scratch}/mirror`, S, CONVERSATION);
    ({ tap, url } = await serveTap(["--mirror-dir", `${scratch}/mirror`], { env: { HOME: scratch, CLAUDE_CONFIG_DIR: `${scratch}/claude` } }));
  });
  after(async () => {
    tap?.signal("SIGTERM");
    await tap?.exit();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("another local user: 403 on every route, the restore writes nothing; health is the bare status", { timeout: MS }, async () => {
    for (const [method, path] of ROUTES) {
      const answer = await asNobody(`${url}${path}`, method);
      assert.equal(answer.status, 403, `${path}: ${answer.body}`);
      assert.doesNotMatch(answer.body, /zebra|1111bbbb/, `${path}: nothing read`);
    }
    const restore = await asNobody(`${url}/_tap/api/sessions/${S}/restore`, "POST", JSON.stringify({ dryRun: false }));
    assert.equal(restore.status, 403, restore.body);
    assert.ok(!existsSync(`${scratch}/claude`), "Claude Code's dir is untouched");
    const health = await asNobody(`${url}/_tap/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(Object.keys(JSON.parse(health.body)), ["status"]);
    assert.doesNotMatch(tap.stdout(), /token=/, "on Linux the viewer URL needs no token");
  });

  it("the owner (this process's user) gets every route, health in full, and the restore, with no token", { timeout: MS }, async () => {
    for (const [, path] of ROUTES.slice(0, 5)) assert.equal((await fetch(`${url}${path}`)).status, 200, path);
    assert.match(await (await fetch(`${url}/_tap/api/search?q=zebra`)).text(), /zebra/);
    assert.ok("runtime" in await (await fetch(`${url}/_tap/health`)).json());
    const restore = await fetch(`${url}/_tap/api/sessions/${S}/restore`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ dryRun: false }),
    });
    assert.equal(restore.status, 200, await restore.clone().text());
    assert.equal((await restore.json()).ok, true);
    assert.deepEqual(readdirSync(`${scratch}/claude/projects/-work-project`), [`${S}.jsonl`]);
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
    for (const [, path] of ROUTES.slice(0, 4)) {
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
    for (const [, path] of ROUTES.slice(0, 5)) assert.equal((await get(path, { cookie: jar })).status, 200, path);
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

describe("on IPv6 loopback too, the owner needs no token", () => {
  it("a tap on ::1 reads its client's uid from /proc/net/tcp6", async () => {
    await using tap = await startTestTap("http://127.0.0.1:9", { SESSIONTAP_HOST: "::1" });
    assert.equal(tap.viewer, `${tap.url}/_tap/`);
    assert.equal((await fetch(`${tap.url}/_tap/api/sessions`)).status, 200);
  });
});
