/**
 * The shared store's schema (docs/DESIGN.md "The shared store") as SQL text, and its migrations, versioned in `sessiontap_schema`.
 * One table of our own, laid out as an Agent SDK SessionStore user would recognise: one JSON entry per
 * transcript record under (project_key, session_id, subpath). The entry column is `json`, not `jsonb`:
 * jsonb rejects `\u0000` and lone surrogates, which real tool output contains; json keeps the text exactly.
 * Migrations run inside one transaction holding an advisory lock, so two taps never migrate at once.
 */
import { LOCK_CLASS, MIGRATION_LOCK, type Sql } from "./pg-client.ts";

/** One step of the schema. */
export interface Migration {
  version: number;
  description: string;
  sql: string;
}

/** Every migration, oldest first. Only ever append: a released step is never edited. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "sessiontap_entries: one json entry per transcript record",
    sql: `
CREATE TABLE sessiontap_entries (
  project_key text NOT NULL,
  session_id  text NOT NULL,
  subpath     text NOT NULL DEFAULT '',
  seq         bigserial PRIMARY KEY,
  uuid        text,
  entry       json NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX sessiontap_entries_uuid ON sessiontap_entries (uuid) WHERE uuid IS NOT NULL;
CREATE INDEX sessiontap_entries_conversation ON sessiontap_entries (session_id, subpath, seq);
CREATE INDEX sessiontap_entries_project ON sessiontap_entries (project_key, session_id);
`,
  },
];

/** The schema version this build writes and reads. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/** The version table, created before anything else. */
const VERSION_TABLE = `
CREATE TABLE IF NOT EXISTS sessiontap_schema (
  version     integer PRIMARY KEY,
  description text NOT NULL,
  applied_at  timestamptz NOT NULL DEFAULT now()
)`;

/** The store's schema version: null when it has none yet. */
export async function schemaVersion(sql: Sql): Promise<number | null> {
  const [{ present }] = await sql<{ present: boolean }[]>`SELECT to_regclass('sessiontap_schema') IS NOT NULL AS present`;
  if (!present) return null;
  const [{ version }] = await sql<{ version: number | null }[]>`SELECT max(version) AS version FROM sessiontap_schema`;
  return version;
}

/** What a migration did. */
export interface Migrated {
  from: number | null;
  to: number;
  applied: number[];
  /** The store's schema is newer than this build knows: nothing was changed. */
  newer: boolean;
}

/**
 * Brings the schema to SCHEMA_VERSION: in one transaction, under the migration advisory lock (a tap that
 * finds another mid-migration waits for it, then sees its result and has nothing left to do). A schema
 * already current costs one read and takes no lock; a newer one is left alone.
 */
export async function migrate(sql: Sql): Promise<Migrated> {
  const seen = await schemaVersion(sql);
  if (seen !== null && seen >= SCHEMA_VERSION) return { from: seen, to: seen, applied: [], newer: seen > SCHEMA_VERSION };
  return await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, ${MIGRATION_LOCK}::int4)`;
    await tx.unsafe(VERSION_TABLE);
    const [{ version }] = await tx<{ version: number | null }[]>`SELECT max(version) AS version FROM sessiontap_schema`;
    const from = version;
    const applied: number[] = [];
    for (const step of MIGRATIONS) {
      if (from !== null && step.version <= from) continue;
      await tx.unsafe(step.sql).simple();
      await tx`INSERT INTO sessiontap_schema (version, description) VALUES (${step.version}, ${step.description})`;
      applied.push(step.version);
    }
    return { from, to: Math.max(from ?? 0, SCHEMA_VERSION), applied, newer: from !== null && from > SCHEMA_VERSION };
  });
}
