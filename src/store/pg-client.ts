// The shared store's client (docs/DESIGN.md "The shared store"): opening postgres.js on a store URL, telling an unreachable store from a job the store refuses,
// and where a commit goes in the table (the same routing and uuid scopes as the mirror tree, so a record has one uuid in the tree and in the…
import { createHash } from "node:crypto";
import postgres from "postgres";
import type { ConversationPlace } from "../protocol/commit-job.ts";
import { encodeProjectDir } from "../transcript/project-dir.ts";
import { deadline } from "../utils/within.ts";

/** A postgres.js client (or a transaction of one). */
export type Sql = postgres.Sql;
/** A transaction's client. */
export type Tx = postgres.TransactionSql;

/** How a client is opened. */
export interface StoreClientOptions {
  /** Connections in the pool (default 4). */
  max?: number;
  /** Seconds to wait for a connection before the store counts as unreachable (default 5). */
  connectTimeoutS?: number;
}

/** Opens a client on a store URL; it connects lazily, on the first query, and reconnects by itself. */
export function openStore(url: string, options: StoreClientOptions = {}): Sql {
  return postgres(url, {
    max: options.max ?? 4,
    connect_timeout: options.connectTimeoutS ?? 5,
    idle_timeout: 60,
    onnotice: () => {},
    // Unnamed statements: works behind a transaction-pooling PgBouncer too (locks are transaction-scoped).
    prepare: false,
    connection: { application_name: "sessiontap" },
  });
}

/** Closes a client, waiting at most `seconds` for queries in flight; never rejects. */
export async function closeStore(sql: Sql, seconds = 2): Promise<void> {
  await sql.end({ timeout: seconds }).catch(() => undefined);
}

/** A store operation that took longer than its bound (its outcome is unknown, like a lost connection). */
export class StoreTimeoutError extends Error {
  override name = "StoreTimeoutError";
  readonly code = "ETIMEDOUT";
}

/** Resolves or rejects like `work`, or rejects with StoreTimeoutError after `ms` (its outcome is then unknown). */
export function bounded<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  return deadline(work, ms, () => new StoreTimeoutError(`${what} took longer than ${ms} ms`));
}

/**
 * True when the store refused this job itself (bad data, a constraint, a limit, or a bug in our code), so
 * retrying it cannot help; false when the store could not be reached, was shutting down, or anything else
 * that a later attempt may get past (the job is kept and retried).
 */
export function isJobError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return !(error instanceof StoreTimeoutError);
  return /^(22|23|54)[0-9A-Z]{3}$/.test(code);
}

/**
 * Why the store refuses every connection for a reason of its settings, or null when it is not that: a role
 * it does not know or a wrong password (SQLSTATE class 28), a database that does not exist (3D000), no
 * right to connect (42501 at connect), a store without the sessiontap schema (ESCHEMA). Retrying such a
 * store as if the network were down would wait for ever in silence (docs/DESIGN.md "The shared store").
 */
export function configurationProblem(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return null;
  if (code === "28P01") return "authentication failed (wrong password)";
  if (code.startsWith("28")) return "authentication failed (the role is not allowed in, or does not exist)";
  if (code === "3D000") return "the database does not exist";
  if (code === "42501") return "the role may not connect to this database";
  if (code === "ESCHEMA") return "the store has no sessiontap schema";
  return null;
}

/** The store URL with any password hidden, for messages and the startup block. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString();
  } catch {
    return "(unparsable store URL)";
  }
}

/** `project_key`: the record's cwd as Claude Code names its project directory, or "unknown". */
export function projectKey(cwd: unknown): string {
  return typeof cwd === "string" && cwd !== "" ? encodeProjectDir(cwd) : "unknown";
}

/** The advisory lock class of sessiontap's conversation locks (two-key form: class, conversation). */
export const LOCK_CLASS = 0x53544150; // "STAP"
/** The advisory lock (class, 0) that migrations take. */
export const MIGRATION_LOCK = 0;

/**
 * A conversation's advisory lock key: 31 bits of sha256 of `<session_id>/<subpath>` (never 0, the
 * migration lock). The text is the store's own and stays put, so taps of different versions sharing a
 * store take the same lock for the same conversation.
 */
export function lockKey(place: ConversationPlace): number {
  const n = createHash("sha256").update(`${place.sessionDir}/${place.subpath}`, "utf8").digest().readUInt32BE(0) & 0x7fffffff;
  return n === MIGRATION_LOCK ? 1 : n;
}

// The schema (docs/DESIGN.md "The shared store"): one table, one json entry per record (json, not jsonb: jsonb rejects `\u0000` and lone
// surrogates real tool output holds); migrations run in one transaction under an advisory lock, versioned in `sessiontap_schema`.
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
