// The compiled binary and the shared store (issue 7): `node scripts/test.mjs binary` builds dist/sessiontap
// and runs this file with SESSIONTAP_BINARY and SESSIONTAP_TEST_PG_URL set. postgres.js must work inside
// the one executable: migrate, serve two turns into the store only, read them back with list and export.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { runTap, serveTap } from "../support/child.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { Conversation } from "../support/client.ts";
import { freshDatabase, pollAsync, storedRows, storeStatus, type TestDatabase } from "../support/pg.ts";

const BINARY = process.env.SESSIONTAP_BINARY ?? "";
const MS = 60_000;

/** The binary under test; fails the calling test with a clear message when there is none. */
function binary(): string {
  assert.ok(BINARY !== "", "SESSIONTAP_BINARY is not set: run `node scripts/test.mjs binary` (builds dist/sessiontap and sets it)");
  assert.ok(existsSync(BINARY), `SESSIONTAP_BINARY=${BINARY} does not exist: build it with \`node scripts/build.mjs\``);
  return BINARY;
}

describe("compiled binary with the PostgreSQL store", () => {
  let scratch: string;
  let stub: StubUpstream;
  let db: TestDatabase;
  before(async () => {
    db = await freshDatabase("binary");
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-binary-store-`);
    stub = await startStub();
  });
  after(async () => {
    await stub?.close();
    await db?.drop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("store migrate, serve into the store, then list and export from it", { timeout: MS }, async () => {
    const migrated = await runTap(["store", "migrate", "--store", db.url], { binary: binary(), env: { HOME: scratch } });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stdout, /to 1 \(applied 1\)/);

    const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", `${scratch}/mirror`, "--store", db.url], {
      binary: binary(),
      env: { HOME: scratch, SESSIONTAP_STORE_ONLY: "true" },
    });
    try {
      assert.match(tap.stdout(), /store {6}postgres:\/\/postgres@127\.0\.0\.1:\d+\/st_binary_/);
      await storeStatus(url);
      const c = new Conversation(url, "binary-store");
      assert.equal((await c.say("hello \u0000 from the binary 🦀")).status, 200);
      assert.equal((await c.say("again")).status, 200);
      const rows = await pollAsync(() => storedRows(db.sql), (r) => r.length >= 4);
      assert.deepEqual(rows.map((r) => r.entry.type), ["user", "assistant", "user", "assistant"]);
      assert.equal((rows[0].entry.message as { content: unknown }).content, "hello \u0000 from the binary 🦀");
    } finally {
      tap.signal("SIGTERM");
    }
    assert.deepEqual(await tap.exit(), { code: 0, signal: null });

    const env = { HOME: scratch, SESSIONTAP_STORE: db.url };
    const list = await runTap(["list", "--json", "--mirror-dir", `${scratch}/mirror`], { binary: binary(), env });
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual(JSON.parse(list.stdout).map((s: { sessionId: string; records: number }) => [s.sessionId, s.records]), [["binary-store", 4]]);
    const exported = await runTap(["export", "binary-store", "--format", "jsonl"], { binary: binary(), env });
    assert.equal(exported.code, 0, exported.stderr);
    assert.deepEqual(exported.stdout.trim().split("\n"), (await storedRows(db.sql)).map((r) => r.text));
  });
});
