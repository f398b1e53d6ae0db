// Issue 7, "many taps, one session": two tap processes on one database serve alternate turns of one
// session (one writing the tree and the store, the other the store only), then race four turns at once,
// then a side request and a subagent turn go through the tap that did not write what they hang from.
// The lineage lives in the store, so every record is there exactly once, and none is reconstructed.
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { serveTap, stopAll, type TapChild } from "../support/child.ts";
import { alternateAndRace, Conversation, textsOf } from "../support/client.ts";
import { freshDatabase, pollAsync, storedRows, storeHealth, storeStatus, type TestDatabase } from "../support/pg.ts";

describe("two taps, one database, one session", () => {
  let stub: StubUpstream;
  let db: TestDatabase;
  let dir: string;
  const children: TapChild[] = [];
  before(async () => {
    db = await freshDatabase("processes");
  });
  after(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-store-procs-`);
  });
  afterEach(async () => {
    await stopAll(children);
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("alternate turns, simultaneous turns, a side request and a subagent: every record exactly once", { timeout: 90_000 }, async () => {
    const a = await serveTap(["--upstream", stub.url, "--mirror-dir", `${dir}/a`, "--store", db.url]);
    children.push(a.tap);
    const b = await serveTap(["--upstream", stub.url, "--mirror-dir", `${dir}/b`, "--store", db.url], { env: { SESSIONTAP_STORE_ONLY: "true" } });
    children.push(b.tap);
    await Promise.all([storeStatus(a.url), storeStatus(b.url)]);
    const mainRows = async () => (await storedRows(db.sql)).filter((r) => r.subpath === "");
    const written = (n: number) => pollAsync(mainRows, (rows) => rows.length >= n, 10_000, `${n} rows`);
    const { history, statuses, racers } = await alternateAndRace(a.url, b.url, "shared", 20, written);
    assert.ok(statuses.every((status) => status === 200));
    assert.ok(racers.every((status) => status === 200));
    // A side request (no tools: a title) through b repeats the main history a and b wrote.
    const side = new Conversation(b.url, "shared", { body: { tools: [] } });
    side.messages.push(...history.messages);
    assert.equal((await side.say("give this a title")).status, 200);
    // A subagent's two turns, one through each tap.
    const agentHeaders = { headers: { "x-claude-code-agent-id": "agent-one" } };
    const agent = new Conversation(a.url, "shared", agentHeaders);
    assert.equal((await agent.say("subagent task")).status, 200);
    // Through the other tap once its first turn is written (as a person's next prompt would be).
    await pollAsync(
      () => storedRows(db.sql),
      (rows) => rows.filter((r) => r.subpath === "subagents/agent-agent-one").length >= 2,
      10_000,
      "the subagent's first turn",
    );
    const agent2 = new Conversation(b.url, "shared", agentHeaders);
    agent2.messages.push(...agent.messages);
    assert.equal((await agent2.say("subagent follow-up")).status, 200);

    const rows = await pollAsync(() => storedRows(db.sql), (r) => r.length >= 48 + 2 + 4, 10_000);
    const main = rows.filter((r) => r.subpath === "").map((r) => r.entry);
    const users = main.filter((r) => r.type === "user").map((r) => textsOf(r)[0]);
    assert.deepEqual(users.slice(0, 20), Array.from({ length: 20 }, (_, i) => `turn ${i}`));
    assert.deepEqual(users.slice(20).sort(), ["race 0", "race 1", "race 2", "race 3"]);
    assert.equal(main.length, 48, "20 turns and 4 racers, user and assistant each");
    assert.equal(rows.filter((r) => r.entry.reconstructed).length, 0, "each tap saw what the other wrote");
    assert.equal(new Set(rows.map((r) => r.uuid)).size, rows.length, "no uuid twice");
    assert.equal(new Set(rows.map((r) => r.text)).size, rows.length, "no entry twice");

    const sideRows = rows.filter((r) => r.subpath === "side").map((r) => r.entry);
    assert.deepEqual(sideRows.map((r) => r.type), ["user", "assistant"], "the side request copied nothing of the main chain");
    assert.equal(textsOf(sideRows[0])[0], "give this a title");
    assert.ok(main.some((r) => r.uuid === sideRows[0].parentUuid), "it hangs from the main record a or b wrote");
    const agentRows = rows.filter((r) => r.subpath === "subagents/agent-agent-one").map((r) => r.entry);
    assert.deepEqual(agentRows.map((r) => r.type), ["user", "assistant", "user", "assistant"]);
    assert.ok(agentRows.every((r) => r.agentId === "agent-one" && r.isSidechain === true));
    assert.ok(rows.every((r) => r.session_id === "shared"));

    for (const url of [a.url, b.url]) {
      const health = await storeHealth(url);
      assert.equal(health.conflicts, 0, "planned against the lineage read from the store: the uuid key never had to catch a duplicate");
      assert.equal(health.spooled, 0);
    }
    for (const c of children) c.signal("SIGTERM");
    for (const c of children) assert.equal((await c.exit()).code, 0);
  });
});
