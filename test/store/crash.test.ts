// Issue 32, "a store that crashes stops the mirror": PostgreSQL killed (`pg_ctl -m immediate`) while many turns flow
// through a tap with --store cut the store's connections mid-transaction, and postgres.js wrote on the closed socket
// from a setImmediate: the engine's Worker died, and most turns reached neither the tree nor the store. Here the kill
// always finds a transaction of the tap in flight (it waits for a conversation's lock, held as another tap would hold
// it), which is what made the driver throw. Every turn is in the tree, the engine never stops, health is degraded while
// the store is down, and once PostgreSQL is back its queue is written: every turn once. This file runs its own cluster.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type Cluster, startCluster } from "../../scripts/pg-test-cluster.mjs";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { Conversation, textsOf } from "../support/client.ts";
import { allRecords, startTestTap } from "../support/tap.ts";
import { LOCK_CLASS, lockKey } from "../../src/store/pg-client.ts";
import { placeOf } from "../../src/protocol/commit-job.ts";
import { clusterUrl, freshDatabase, pollAsync, storedRows, storeStatus, type TestDatabase } from "../support/pg.ts";

const SESSIONS = 20;
const TURNS = 30;
const health = async (url: string) => await (await fetch(`${url}/_tap/health`)).json();
const users = (records: Record<string, unknown>[]) => records.filter((r) => r.type === "user").map((r) => textsOf(r)[0]);

describe("PostgreSQL killed while turns flow", () => {
  let cluster: Cluster | undefined;
  let db: TestDatabase | undefined;
  let stub: StubUpstream | undefined;
  after(async () => {
    await stub?.close();
    await db?.drop();
    cluster?.stop();
  });

  it("costs the tree nothing, never stops the engine, and the store gets every turn once it is back", { timeout: 180_000 }, async () => {
    clusterUrl(); // the suite's cluster is required like everywhere else; this file adds one of its own (started here: it outlasts a hook's bound)
    cluster = await startCluster();
    db = await freshDatabase("crash", cluster.url);
    // The test cluster commits asynchronously for speed, and a crash may lose such a commit; a real store does not.
    await db.sql.unsafe(`ALTER DATABASE ${db.name} SET synchronous_commit TO on`);
    stub = await startStub();
    await using tap = await startTestTap(stub.url, { SESSIONTAP_STORE: db.url });
    await storeStatus(tap.url);
    // Another writer holds crash-0's lock; it never lets go (its connection dies with the store).
    let locked = () => {};
    const lockTaken = new Promise<void>((resolve) => (locked = resolve));
    db.sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, ${lockKey(placeOf("main", "crash-0", null))}::int4)`;
      locked();
      await new Promise(() => {});
    }).catch(() => undefined);
    await lockTaken;
    let answered = 0;
    const flows = Array.from({ length: SESSIONS }, async (_, i) => {
      const c = new Conversation(tap.url, `crash-${i}`);
      for (let n = 0; n < TURNS; n++) {
        assert.equal((await c.say(`turn ${n}`)).status, 200, `turn ${n} of crash-${i} answered`);
        answered++;
      }
    });
    const waiting = () => db!.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`;
    await pollAsync(waiting, ([{ n }]) => n > 0, 30_000, "the tap's transaction to wait for the lock");
    await pollAsync(() => answered, (n) => n >= (SESSIONS * TURNS) / 4, 60_000, "a quarter of the turns");
    cluster!.crash();
    const down = await pollAsync(() => health(tap.url), (h) => h.store?.status === "unreachable", 30_000, "the store to be unreachable");
    assert.equal(down.status, "degraded");
    assert.ok(down.problems.some((p: string) => p.startsWith("store: unreachable")), down.problems.join("; "));
    await Promise.all(flows);
    cluster!.resume();
    await storeStatus(tap.url, "ok", 60_000);
    const back = await pollAsync(() => health(tap.url), (h) => h.status === "ok" && h.store.spooled === 0, 60_000, "the store's queue to be written");
    assert.deepEqual(back.problems, []);

    assert.equal(back.engineRestarts, 0, "the engine never stopped");
    assert.deepEqual(tap.stderrLines.filter((l) => /mirror engine/.test(l)), []);
    await tap.settled();
    const rows = await storedRows(db!.sql);
    for (let i = 0; i < SESSIONS; i++) {
      const turns = Array.from({ length: TURNS }, (_, n) => `turn ${n}`);
      const tree = allRecords(`${tap.root}/crash-${i}`);
      assert.deepEqual(users(tree), turns, `every turn of crash-${i} in the tree`);
      assert.equal(tree.filter((r) => r.reconstructed).length, 0, "every answer as the client saw it");
      const stored = rows.filter((r) => r.session_id === `crash-${i}`).map((r) => r.entry);
      assert.deepEqual(users(stored), turns, `every turn of crash-${i} in the store, once`);
      assert.equal(stored.length, 2 * TURNS);
      assert.equal(stored.filter((r) => r.reconstructed).length, 0);
    }
    assert.equal(new Set(rows.map((r) => r.uuid)).size, rows.length, "no record twice");
  });
});
