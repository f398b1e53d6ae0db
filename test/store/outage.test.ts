// Issue 7, "store outages": PostgreSQL stopped mid-session and started again on the same port. The
// client is unaffected (every turn answers 200, never waiting for the store), commits are spooled
// under <root>/.spool/postgres/ (0700/0600) and replayed in order when the store is back: nothing lost,
// nothing doubled, nothing reconstructed; /_tap/health says unreachable, then ok; the events log says so.
// Then a tap killed with commits still spooled: the next tap on that root adopts and replays them.
// This file runs its own cluster (it stops it), so other tests are never disturbed.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import process from "node:process";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { type Cluster, startCluster } from "../../scripts/pg-test-cluster.mjs";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { serveTap } from "../support/child.ts";
import { Conversation, textsOf } from "../support/client.ts";
import { readEvents, readTree } from "../support/tap.ts";
import { clusterUrl, freshDatabase, pollAsync, storedRows, storeHealth, storeStatus, type TestDatabase } from "../support/pg.ts";

/** The tap's stderr lines about the store. */
const storeLines = (stderr: string) => stderr.split("\n").filter((l) => /sessiontap: the store /.test(l));
/** What a store line says: it went away, or it is back. */
const kind = (line: string) => (/unreachable/.test(line) ? "unreachable" : /usable again/.test(line) ? "back" : line);

/** Whether a TCP connection to 127.0.0.1:`port` is refused now: the store is down at that moment. */
function refuses(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNREFUSED" ? resolve(true) : reject(error)));
  });
}

/** Every process of the cluster: its postmaster (the first line of postmaster.pid) and the postmaster's children. */
function clusterPids(cluster: Cluster): number[] {
  const postmaster = Number(readFileSync(`${cluster.dir}/data/postmaster.pid`, "utf8").split("\n")[0]);
  const children = spawnSync("pgrep", ["-P", String(postmaster)], { encoding: "utf8" }).stdout.split("\n").filter(Boolean).map(Number);
  return [postmaster, ...children];
}

describe("a store outage mid-session", () => {
  let cluster: Cluster;
  let db: TestDatabase;
  let stub: StubUpstream;
  let dir: string;
  before(async () => {
    clusterUrl(); // the suite's cluster is required like everywhere else; this file adds one of its own
    cluster = await startCluster();
    db = await freshDatabase("outage", cluster.url);
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-store-outage-`);
  });
  after(async () => {
    await stub?.close();
    await db?.drop();
    cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("is spooled, replayed in order when PostgreSQL is back, and the client never notices", { timeout: 90_000 }, async () => {
    const root = `${dir}/one`;
    const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", root, "--store", db.url], { env: { SESSIONTAP_STORE_ONLY: "true" } });
    try {
      await storeStatus(url);
      const c = new Conversation(url, "outage");
      const turn = async (n: number) => assert.equal((await c.say(`turn ${n}`)).status, 200, `turn ${n} answered`);
      for (let n = 0; n < 4; n++) await turn(n);
      await pollAsync(() => storedRows(db.sql), (r) => r.length === 8);

      cluster.pause();
      for (let n = 4; n < 8; n++) {
        await turn(n);
        assert.ok(await refuses(cluster.port), `turn ${n} was answered while the store's port refused connections`);
      }
      const down = await pollAsync(() => storeHealth(url), (h) => h.status === "unreachable" && h.spooled === 4, 15_000);
      assert.equal(down.status, "unreachable");
      assert.equal(down.spooled, 4, "four commits spooled");
      const spoolDir = `${root}/.spool/postgres`;
      assert.equal(statSync(spoolDir).mode & 0o777, 0o700);
      const spooled = readdirSync(spoolDir);
      assert.equal(spooled.length, 1);
      assert.equal(statSync(`${spoolDir}/${spooled[0]}`).mode & 0o777, 0o600);
      assert.equal([...readTree(root).keys()].filter((p) => !p.startsWith(".spool/")).length, 0, "store only: the tree holds nothing but the spool");

      cluster.resume();
      const up = await storeStatus(url, "ok", 30_000);
      assert.equal(up.spooled, 0);
      assert.equal(up.replayed, 4);
      assert.equal(up.conflicts, 0, "replayed by re-planning against the store's lineage, not by the uuid key");
      for (let n = 8; n < 10; n++) await turn(n);
      const rows = await pollAsync(() => storedRows(db.sql), (r) => r.length >= 20);
      const users = rows.filter((r) => r.entry.type === "user").map((r) => textsOf(r.entry)[0]);
      assert.deepEqual(users, Array.from({ length: 10 }, (_, i) => `turn ${i}`), "every turn once, in order");
      assert.equal(rows.length, 20);
      assert.equal(rows.filter((r) => r.entry.reconstructed).length, 0, "replayed in order: every answer as the client saw it");
      assert.equal(new Set(rows.map((r) => r.uuid)).size, 20);
      // A commit is on the spool before PostgreSQL has it, and leaves it just after: wait for the last to leave.
      assert.deepEqual(await pollAsync(() => readdirSync(spoolDir), (f) => f.length === 0), [], "the spool is empty again");
      const states = readEvents(root).filter((e) => e.action === "store").map((e) => e.status);
      assert.deepEqual(states, ["ok", "unreachable", "ok"], "the events log says when the store went away and came back");
      assert.deepEqual(storeLines(tap.stderr()).map(kind), ["unreachable", "back"], `stderr says it once each way: ${storeLines(tap.stderr())}`);
    } finally {
      tap.signal("SIGTERM");
      assert.equal((await tap.exit()).code, 0);
    }
    assert.doesNotMatch(tap.stderr(), /unhandled|uncaught/i, "never an unhandled rejection");
  });

  it("unreachable at start: said at once on stderr, and when the store comes up", { timeout: 90_000 }, async () => {
    cluster.pause();
    const root = `${dir}/at-start`;
    const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", root, "--store", db.url]);
    try {
      await tap.waitFor("stderr", /store .* is unreachable/);
      assert.equal((await new Conversation(url, "at-start").say("while it is down")).status, 200);
      cluster.resume();
      await storeStatus(url, "ok", 30_000);
      await tap.waitFor("stderr", /store .* is usable again; 1 spooled commit written/);
      assert.deepEqual(storeLines(tap.stderr()).map(kind), ["unreachable", "back"], storeLines(tap.stderr()).join(" | "));
    } finally {
      tap.signal("SIGTERM");
      assert.equal((await tap.exit()).code, 0);
    }
  });

  it(
    "PostgreSQL stopped with SIGSTOP (every process of it): said once when its transactions time out, and when it answers again",
    { timeout: 90_000 },
    async () => {
      const root = `${dir}/sigstop`;
      const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", root, "--store", db.url]);
      try {
        await storeStatus(url);
        const c = new Conversation(url, "sigstop");
        assert.equal((await c.say("before")).status, 200);
        // Listed only now, with the tap's connections made: a backend forked after the list would go on answering.
        const pids = clusterPids(cluster);
        for (const pid of pids) process.kill(pid, "SIGSTOP");
        try {
          assert.equal((await c.say("while it is stopped")).status, 200);
          // The tap gives a stopped store's transaction 10 s before it calls it unreachable: an answer that waited would come after.
          assert.deepEqual(storeLines(tap.stderr()), [], "the client never waits for the store: answered before its transaction timed out");
          await tap.waitFor("stderr", /store .* is unreachable/, 40_000);
        } finally {
          for (const pid of pids) process.kill(pid, "SIGCONT");
        }
        await storeStatus(url, "ok", 40_000);
        await tap.waitFor("stderr", /store .* is usable again/, 20_000);
        assert.deepEqual(storeLines(tap.stderr()).map(kind), ["unreachable", "back"], storeLines(tap.stderr()).join(" | "));
        const rows = await pollAsync(() => storedRows(db.sql), (r) => r.filter((x) => x.session_id === "sigstop").length === 4);
        assert.equal(rows.filter((x) => x.session_id === "sigstop").length, 4, "both turns once");
      } finally {
        tap.signal("SIGTERM");
        await tap.exit();
      }
    },
  );

  it("a tap killed with commits spooled: the next tap on that root replays them once", { timeout: 90_000 }, async () => {
    const root = `${dir}/two`;
    const first = await serveTap(["--upstream", stub.url, "--mirror-dir", root, "--store", db.url]);
    await storeStatus(first.url);
    const c = new Conversation(first.url, "killed");
    assert.equal((await c.say("before")).status, 200);
    await pollAsync(() => storedRows(db.sql), (r) => r.filter((x) => x.session_id === "killed").length === 2);
    cluster.pause();
    try {
      assert.equal((await c.say("during 1")).status, 200);
      assert.equal((await c.say("during 2")).status, 200);
      await pollAsync(() => storeHealth(first.url), (h) => h.spooled === 2, 15_000);
      first.tap.child.kill("SIGKILL");
      await first.tap.exited;
    } finally {
      cluster.resume();
    }
    const second = await serveTap(["--upstream", stub.url, "--mirror-dir", root, "--store", db.url]);
    try {
      await pollAsync(() => storeHealth(second.url), (h) => h.status === "ok" && h.replayed === 2, 30_000);
      const c2 = new Conversation(second.url, "killed");
      c2.messages.push(...c.messages);
      assert.equal((await c2.say("after")).status, 200);
      const rows = (await pollAsync(() => storedRows(db.sql), (r) => r.filter((x) => x.session_id === "killed").length >= 8)).filter((r) =>
        r.session_id === "killed"
      );
      assert.deepEqual(rows.filter((r) => r.entry.type === "user").map((r) => textsOf(r.entry)[0]), ["before", "during 1", "during 2", "after"]);
      assert.equal(rows.length, 8);
      assert.equal(rows.filter((r) => r.entry.reconstructed).length, 0);
      assert.ok(readEvents(root).some((e) => e.action === "store-spool" && typeof e.adopted === "string"), "the adoption is in the events log");
      assert.deepEqual(await pollAsync(() => readdirSync(`${root}/.spool/postgres`), (f) => f.length === 0), []);
    } finally {
      second.tap.signal("SIGTERM");
      assert.equal((await second.tap.exit()).code, 0);
    }
    assert.doesNotMatch(first.tap.stderr() + second.tap.stderr(), /unhandled|uncaught/i, "never an unhandled rejection");
  });
});
