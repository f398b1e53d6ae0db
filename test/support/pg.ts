/**
 * PostgreSQL for the store tests: a fresh database per test file on the cluster scripts/test.mjs starts
 * (SESSIONTAP_TEST_PG_URL), created and dropped here so runs never interfere. A test that needs PostgreSQL
 * fails with a clear message when the variable is unset; it is never skipped.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import process from "node:process";
import { closeStore, openStore, type Sql } from "../../src/store/pg-client.ts";
import { pollAsync } from "./poll.ts";

/** The cluster's URL; fails the calling test when there is none. */
export function clusterUrl(): string {
  const url = process.env.SESSIONTAP_TEST_PG_URL ?? "";
  assert.ok(
    url !== "",
    "SESSIONTAP_TEST_PG_URL is not set: the store tests need a real PostgreSQL. Run them through `node scripts/test.mjs` " +
      "(it starts a throwaway cluster), or start one with `node scripts/pg-test-cluster.mjs` and export the URL it prints.",
  );
  return url;
}

/** A database of one test, with a client on it. */
export interface TestDatabase {
  url: string;
  name: string;
  sql: Sql;
  /** Closes the client and drops the database. */
  drop(): Promise<void>;
}

/** Creates a fresh, empty database on `base` (default: the test cluster). */
export async function freshDatabase(label: string, base = clusterUrl()): Promise<TestDatabase> {
  const name = `st_${label.replace(/[^a-z0-9]/gi, "_").toLowerCase().slice(0, 30)}_${randomBytes(4).toString("hex")}`;
  const admin = openStore(base, { max: 1 });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await closeStore(admin);
  }
  const u = new URL(base);
  u.pathname = `/${name}`;
  const url = u.toString();
  const sql = openStore(url, { max: 2 });
  return {
    url,
    name,
    sql,
    async drop() {
      await closeStore(sql);
      const admin = openStore(base, { max: 1 });
      try {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } catch {
        // the cluster is gone already (a test stopped it): nothing to drop
      } finally {
        await closeStore(admin);
      }
    },
  };
}

/** Every row of the store, in seq order, with each entry as its exact stored text and parsed. */
export async function storedRows(
  sql: Sql,
): Promise<{ session_id: string; subpath: string; project_key: string; uuid: string | null; text: string; entry: Record<string, unknown> }[]> {
  const rows = await sql<{ session_id: string; subpath: string; project_key: string; uuid: string | null; text: string }[]>`
    SELECT session_id, subpath, project_key, uuid, entry::text AS text FROM sessiontap_entries ORDER BY seq`;
  return rows.map((r) => ({ ...r, entry: JSON.parse(r.text) as Record<string, unknown> }));
}

export { pollAsync };

/** The tap's /_tap/health `store` object. */
export async function storeHealth(tapUrl: string): Promise<Record<string, unknown>> {
  const health = await (await fetch(`${tapUrl}/_tap/health`)).json();
  return health.store as Record<string, unknown>;
}

/** Waits until the tap's store says `status` (default "ok"); returns its last health. */
export async function storeStatus(tapUrl: string, status = "ok", ms = 15_000): Promise<Record<string, unknown>> {
  const h = await pollAsync(() => storeHealth(tapUrl), (x) => x?.status === status, ms);
  assert.equal(h?.status, status, `the store never said ${status}: ${JSON.stringify(h)}`);
  return h;
}
