// Issue 7, "a retried batch inserts nothing twice": the record uuid is the idempotency key (unique where
// present, INSERT … ON CONFLICT DO NOTHING), and every write is re-planned against the lineage stored in
// PostgreSQL. So the same batch inserted again, the same commit retried, a fresh tap (no memory) given a
// commit already written, and a spool replaying a commit that had already reached the store all leave
// each record once. Jobs are built by the engine's own request reading and response following from a request body and an SSE answer.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { isSkip, prepareRequest, ResponseFollower } from "../../src/mirror/response-follower.ts";
import type { CommitJob } from "../../src/protocol/commit-job.ts";
import { PgSink } from "../../src/store/pg-sink.ts";
import { type EntryRow, insertEntries } from "../../src/store/pg-target.ts";
import { textReply } from "../support/stub-upstream.ts";
import { BASH_TOOL } from "../support/client.ts";
import { freshDatabase, pollAsync, storedRows, type TestDatabase } from "../support/pg.ts";

const encode = (s: string) => new TextEncoder().encode(s);

/** The commit the mirror makes for `messages` answered with `answer` (through the engine's ResponseFollower, as the tap does). */
function jobFor(session: string, messages: { role: string; content: unknown }[], answer: string, n: number): CommitJob {
  let job: CommitJob | null = null;
  const sink = {
    commit: async (j: CommitJob) => void (job = j),
    skip: () => {},
    truncated: () => {},
    gaveUp: () => {},
    log: () => {},
    clock: Date.now,
    maxMessageBytes: 1 << 25,
  };
  const identity = { session, agent: null, parentAgent: null, userAgent: null };
  const body = encode(JSON.stringify({ model: "claude-test", max_tokens: 10, stream: true, tools: [BASH_TOOL], messages }));
  const follower = new ResponseFollower(sink, identity, Date.now());
  const prepared = prepareRequest(identity, body, { version: "0.1.0", sideRequests: true });
  assert.ok(!isSkip(prepared), "the request is mirrored");
  follower.body(prepared);
  follower.response(200, `req_retry_${n}`, "sse");
  for (const chunk of textReply(answer, { id: `msg_retry_${n}` })) follower.feed(encode(chunk));
  follower.end();
  assert.ok(job !== null, "the follower made a commit");
  return job;
}

describe("retries never double a record in the store", () => {
  let db: TestDatabase;
  let dir: string;
  const sinks: PgSink[] = [];
  const sink = (start = true) => {
    const s = new PgSink({ url: db.url, fs: nodeFs, root: dir, includeThinking: true, maxSessions: 16, log: () => {}, retryMinMs: 50 });
    sinks.push(s);
    if (start) s.start();
    return s;
  };
  const history = [{ role: "user", content: "first" }];
  let job1: CommitJob;
  let job2: CommitJob;
  before(async () => {
    db = await freshDatabase("retry");
    dir = mkdtempSync(`${tmpdir()}/sessiontap-store-retry-`);
    job1 = jobFor("retry", history, "answer one", 1);
    job2 = jobFor(
      "retry",
      [...history, { role: "assistant", content: [{ type: "text", text: "answer one" }] }, { role: "user", content: "second" }],
      "answer two",
      2,
    );
  });
  after(async () => {
    for (const s of sinks) await s.close();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the same commit twice, then again through a tap with no memory: each record once", async () => {
    const a = sink();
    await a.commit(job1);
    await a.commit(job1);
    await pollAsync(async () => a.health(), (h) => h.status === "ok" && h.spooled === 0);
    const b = sink();
    await b.commit(job1);
    await b.commit(job2);
    await pollAsync(async () => b.health(), (h) => h.status === "ok" && h.spooled === 0);
    assert.equal(a.health().conflicts, 0, "the retry was planned away, not caught by the uuid key");
    assert.equal(b.health().conflicts, 0, "the tap without memory read the lineage from the store first");
    const rows = await storedRows(db.sql);
    assert.deepEqual(rows.map((r) => `${r.entry.type}`), ["user", "assistant", "user", "assistant"]);
    assert.equal(rows.filter((r) => r.entry.reconstructed).length, 0);
    assert.equal(new Set(rows.map((r) => r.uuid)).size, 4);
  });

  it("the same batch of rows inserted again inserts nothing; a batch with one new row inserts only that one", async () => {
    const rows = await storedRows(db.sql);
    const batch: EntryRow[] = rows.map((r) => ({ project_key: r.project_key, session_id: r.session_id, subpath: r.subpath, uuid: r.uuid, entry: r.text }));
    const again = await db.sql.begin((tx) => insertEntries(tx, batch));
    assert.deepEqual(again, [], "nothing inserted");
    const extra = {
      ...batch[0],
      uuid: "00000000-0000-0000-0000-00000000beef",
      entry: JSON.stringify({ ...rows[0].entry, uuid: "00000000-0000-0000-0000-00000000beef" }),
    };
    const mixed = await db.sql.begin((tx) => insertEntries(tx, [...batch, extra]));
    assert.equal(mixed.length, 1);
    assert.equal((await storedRows(db.sql)).length, rows.length + 1);
    await db.sql`DELETE FROM sessiontap_entries WHERE uuid = ${extra.uuid}`;
  });

  it("a spool replaying a commit that had already reached the store (a crash before its line was removed) writes nothing twice", async () => {
    const before = (await storedRows(db.sql)).length;
    const c = sink(false);
    await c.spool.append(job1);
    await c.spool.append(job2);
    c.start();
    const job3 = jobFor(
      "retry",
      [
        ...history,
        { role: "assistant", content: [{ type: "text", text: "answer one" }] },
        { role: "user", content: "second" },
        { role: "assistant", content: [{ type: "text", text: "answer two" }] },
        { role: "user", content: "third" },
      ],
      "answer three",
      3,
    );
    await c.commit(job3);
    const h = await pollAsync(async () => c.health(), (x) => x.status === "ok" && x.spooled === 0);
    assert.equal(h.spooled, 0);
    const rows = await storedRows(db.sql);
    assert.equal(rows.length, before + 2, "only the new turn");
    assert.equal(new Set(rows.map((r) => r.uuid)).size, rows.length);
    assert.equal(rows.filter((r) => r.entry.reconstructed).length, 0);
  });
});
