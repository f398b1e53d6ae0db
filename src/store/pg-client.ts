/**
 * The shared store's client (docs/DESIGN.md "The shared store"): opening postgres.js on a store URL, telling an unreachable store from
 * a job the store refuses, and where a commit goes in the table (the same routing and uuid scopes as the
 * mirror tree, so a record has one uuid in the tree and in the store).
 */
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
