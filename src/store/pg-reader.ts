// Reading sessions back from the shared store (docs/DESIGN.md "The shared store") in the mirror tree reader's shape (SessionSource): a session
// is a `session_id`, its main conversation the rows with subpath "", its side and subagent conversations the others, each in seq order.
import { upgradeOlderRecord } from "../transcript/records.ts";
import type { Config } from "../config/parse.ts";
import type { SessionData } from "../transcript/summary.ts";
import { describe } from "../utils/describe-error.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { type Lookup, lookupSession, MirrorReader, type SessionSource } from "../storage/mirror-reader.ts";
import { closeStore, openStore, redactUrl, schemaVersion, type Sql } from "./pg-client.ts";

type Row = { session_id: string; subpath: string; entry: string; bytes: number };

export class StoreReadError extends Error {
  override name = "StoreReadError";
}

export class PgReader implements SessionSource {
  private checked = false;

  constructor(
    private readonly sql: Sql,
    readonly where: string,
  ) {}

  async loadAll(): Promise<SessionData[]> {
    const rows = await this.query(() =>
      this.sql<(Row & { last: string })[]>`
      SELECT session_id, subpath, entry::text AS entry, octet_length(entry::text) AS bytes,
        max(created_at) OVER (PARTITION BY session_id) AS last
      FROM sessiontap_entries ORDER BY last DESC, session_id, seq`
    );
    return sessionsOf(rows);
  }

  async load(sessionId: string): Promise<SessionData> {
    const rows = await this.query(() =>
      this.sql<Row[]>`
      SELECT session_id, subpath, entry::text AS entry, octet_length(entry::text) AS bytes
      FROM sessiontap_entries WHERE session_id = ${sessionId} ORDER BY seq`
    );
    return sessionsOf(rows)[0] ?? emptySession(sessionId);
  }

  async sessionDirs(): Promise<string[]> {
    const rows = await this.query(() => this.sql<{ session_id: string }[]>`SELECT DISTINCT session_id FROM sessiontap_entries ORDER BY session_id`);
    return rows.map((r) => r.session_id);
  }

  lookup(query: string): Promise<Lookup> {
    return lookupSession(this, query);
  }

  /** Checks once that the store has the schema; failures become one StoreReadError line. */
  private async query<T>(run: () => Promise<T>): Promise<T> {
    try {
      if (!this.checked) {
        if ((await schemaVersion(this.sql)) === null) {
          throw new StoreReadError(`the store ${this.where} has no sessiontap schema yet (sessiontap store migrate creates it)`);
        }
        this.checked = true;
      }
      return await run();
    } catch (error) {
      if (error instanceof StoreReadError) throw error;
      throw new StoreReadError(`cannot read the store ${this.where}: ${describe(error)}`);
    }
  }

  async close(): Promise<void> {
    await closeStore(this.sql, 1);
  }
}

function emptySession(dir: string): SessionData {
  return { dir, records: [], malformed: 0, files: 0, bytes: 0, agents: [], side: [] };
}

/** Rows in seq order, grouped by session in the order first met. */
function sessionsOf(rows: Row[]): SessionData[] {
  const sessions = new Map<string, SessionData>();
  for (const row of rows) {
    const data = sessions.get(row.session_id) ?? sessions.set(row.session_id, emptySession(row.session_id)).get(row.session_id)!;
    data.bytes += Number(row.bytes) + 1; // as a JSONL line
    const record = upgradeOlderRecord(JSON.parse(row.entry) as Record<string, unknown>);
    if (row.subpath === "") {
      data.records.push(record);
      data.files = 1;
    } else if (row.subpath === "side") data.side.push(record);
    else {
      const dir = row.subpath.startsWith("subagents/") ? row.subpath.slice("subagents/".length) : row.subpath;
      const agent = data.agents.find((a) => a.dir === dir) ?? data.agents[data.agents.push({ dir, records: [] }) - 1];
      agent.records.push(record);
    }
  }
  return [...sessions.values()];
}

export async function withSessionSource<T>(config: Readonly<Config>, fs: FsAdapter, fn: (source: SessionSource) => Promise<T>): Promise<T> {
  if (config.store === null) return await fn(new MirrorReader(fs, config.mirrorDir));
  const reader = new PgReader(openStore(config.store, { max: 1, connectTimeoutS: 10 }), redactUrl(config.store));
  try {
    return await fn(reader);
  } finally {
    await reader.close();
  }
}

/** For messages: the store (without its password) or the mirror root. */
export function sourceName(config: Readonly<Config>): string {
  return config.store === null ? config.mirrorDir : `the store ${redactUrl(config.store)}`;
}
