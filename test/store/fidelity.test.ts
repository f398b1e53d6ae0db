// Issue 7: what goes into the shared store comes back exactly. The reliability corpus (NUL, lone
// surrogates, astral characters, CRLF, controls) round-trips through a tap writing both the tree and
// PostgreSQL; each stored entry is byte for byte the line the tree holds (json, not jsonb; bound as text).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { type StubUpstream, textReply } from "../support/stub-upstream.ts";
import { readTree, type TestTap, withTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";
import { freshDatabase, pollAsync, storedRows, storeStatus, type TestDatabase } from "../support/pg.ts";
import { CORPUS } from "../support/corpus.ts";

describe("store fidelity: the corpus round-trips exactly through PostgreSQL", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let db: TestDatabase;
  before(async () => {
    db = await freshDatabase("fidelity");
  });
  withTap((started) => ({ stub, tap } = started), () => ({ env: { SESSIONTAP_STORE: db.url } }));
  before(async () => {
    await storeStatus(tap.url);
  });
  after(async () => {
    await db?.drop();
  });

  for (const [name, text] of Object.entries(CORPUS)) {
    it(`${name}: the user's text and the streamed answer are stored exactly, as the tree holds them`, async () => {
      const session = `store-fidelity-${name.replace(/[^a-z]/g, "-")}`;
      stub.enqueue({ kind: "sse", chunks: textReply(`echo: ${text}`, { deltas: 7 }) });
      const c = new Conversation(tap, session, { system: `Primary working directory: /home/me/proj ${name}` });
      assert.equal((await c.say([{ type: "text", text }])).status, 200);
      const rows = await pollAsync(async () => (await storedRows(db.sql)).filter((r) => r.session_id === session), (r) => r.length >= 2);
      assert.equal(rows.length, 2);
      const [user, assistant] = rows.map((r) => r.entry);
      assert.deepEqual((user.message as { content: unknown }).content, [{ type: "text", text }]);
      assert.deepEqual((assistant.message as { content: unknown }).content, [{ type: "text", text: `echo: ${text}` }]);
      // The stored text is the tree's line, byte for byte: same record, same uuid, same escapes.
      const files = [...readTree(`${tap.root}/${session}`).keys()];
      assert.equal(files.length, 1);
      const lines = readFileSync(`${tap.root}/${session}/${files[0]}`, "utf8").split("\n").filter(Boolean);
      assert.deepEqual(rows.map((r) => r.text), lines);
      assert.deepEqual(rows.map((r) => r.uuid), rows.map((r) => r.entry.uuid));
      assert.deepEqual(rows.map((r) => r.subpath), ["", ""]);
      assert.equal(typeof user.cwd, "string", "the cwd was read from the environment block");
      assert.equal(rows[0].project_key, String(user.cwd).replace(/[^A-Za-z0-9]/g, "-"), "project_key is the cwd as Claude Code names it");
    });
  }

  it("a lone surrogate or NUL that jsonb would reject is in a json column: the database itself says so", async () => {
    const [{ type }] = await db.sql<
      { type: string }[]
    >`SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = 'sessiontap_entries'::regclass AND attname = 'entry'`;
    assert.equal(type, "json");
    const [{ n }] = await db.sql<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM sessiontap_entries WHERE entry::text LIKE '%\\u0000%' OR entry::text LIKE '%\\ud800%'`;
    assert.ok(n >= 2, "rows holding \\u0000 and \\ud800 escapes are stored");
    await assert.rejects(db.sql`SELECT entry::text::jsonb FROM sessiontap_entries WHERE entry::text LIKE '%\\u0000%'`, /Unicode escape/);
  });
});
