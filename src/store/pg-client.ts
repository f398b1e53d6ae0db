// The shared store's client and schema (docs/DESIGN.md "The shared store"): postgres.js on a store URL, an unreachable store told from a
// job the store refuses, and where a commit goes in the table.
import { createHash } from "node:crypto";
import postgres from "postgres";
import type { ConversationPlace } from "../protocol/commit-job.ts";
import { encodeProjectDir } from "../storage/claude-projects.ts";
import { deadline } from "../utils/alarm.ts";

export type Sql = postgres.Sql;
export type Tx = postgres.TransactionSql;

/** Connects lazily, on the first query, and reconnects by itself; `connectTimeoutS`: then the store counts as unreachable. */
export function openStore(url: string, options: { max?: number; connectTimeoutS?: number } = {}): Sql {
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

/** Waits at most `seconds` for queries in flight; never rejects. */
export async function closeStore(sql: Sql, seconds = 2): Promise<void> {
  await sql.end({ timeout: seconds }).catch(() => undefined);
}

export class StoreTimeoutError extends Error {
  override name = "StoreTimeoutError";
  readonly code = "ETIMEDOUT";
}

export function bounded<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  return deadline(work, ms, () => new StoreTimeoutError(`${what} took longer than ${ms} ms`));
}

/** True when the store refused this job itself (bad data, a constraint, a limit), so retrying cannot help; false for what a later attempt may get past. */
export function isJobError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return !(error instanceof StoreTimeoutError);
  return /^(22|23|54)[0-9A-Z]{3}$/.test(code);
}

const PROBLEMS: [RegExp, string][] = [
  [/^28P01$/, "authentication failed (wrong password)"],
  [/^28/, "authentication failed (the role is not allowed in, or does not exist)"],
  [/^3D000$/, "the database does not exist"],
  [/^42501$/, "the role may not connect to this database"],
];

/** Why the store refuses every connection for its settings (retried as an outage it would wait for ever in silence), or null. */
export function configurationProblem(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? PROBLEMS.find(([sqlstate]) => sqlstate.test(code))?.[1] ?? null : null;
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== "") u.password = "***";
    return u.toString();
  } catch {
    return "(unparsable store URL)";
  }
}

export function projectKey(cwd: unknown): string {
  return typeof cwd === "string" && cwd !== "" ? encodeProjectDir(cwd) : "unknown";
}

/** Advisory locks are (class, conversation); (class, 0) is the migrations'. */
export const LOCK_CLASS = 0x53544150; // "STAP"
export const MIGRATION_LOCK = 0;

/** 31 bits of sha256 of `<session_id>/<subpath>`, never 0: taps of every version sharing a store take the same lock for a conversation. */
export function lockKey(place: ConversationPlace): number {
  const n = createHash("sha256").update(`${place.sessionDir}/${place.subpath}`, "utf8").digest().readUInt32BE(0) & 0x7fffffff;
  return n === MIGRATION_LOCK ? 1 : n;
}

// The schema (docs/DESIGN.md "The shared store"): one table, one json entry per record (json, not jsonb: jsonb rejects `\u0000` and lone
// surrogates real tool output holds); migrations run in one transaction under an advisory lock, versioned in `sessiontap_schema`.
/** Every migration, oldest first. Only ever append: a released step is never edited. */
export const MIGRATIONS: readonly { version: number; description: string; sql: string }[] = [
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

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

const VERSION_TABLE = `
CREATE TABLE IF NOT EXISTS sessiontap_schema (
  version     integer PRIMARY KEY,
  description text NOT NULL,
  applied_at  timestamptz NOT NULL DEFAULT now()
)`;

export async function schemaVersion(sql: Sql | Tx): Promise<number | null> {
  const [{ present }] = await sql<{ present: boolean }[]>`SELECT to_regclass('sessiontap_schema') IS NOT NULL AS present`;
  if (!present) return null;
  const [{ version }] = await sql<{ version: number | null }[]>`SELECT max(version) AS version FROM sessiontap_schema`;
  return version;
}

/** `newer`: the store's schema is newer than this build knows, and was left alone. */
export interface Migrated {
  from: number | null;
  to: number;
  applied: number[];
  newer: boolean;
}

/** In one transaction under the migration lock (a tap that finds another mid-migration waits, then has nothing left to do); a current schema costs one read. */
export async function migrate(sql: Sql): Promise<Migrated> {
  const seen = await schemaVersion(sql);
  if (seen !== null && seen >= SCHEMA_VERSION) return { from: seen, to: seen, applied: [], newer: seen > SCHEMA_VERSION };
  return await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK_CLASS}::int4, ${MIGRATION_LOCK}::int4)`;
    await tx.unsafe(VERSION_TABLE);
    const from = await schemaVersion(tx);
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
