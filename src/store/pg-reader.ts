// Reading sessions back from the shared store (docs/DESIGN.md "The shared store") for `list`, `show`, `export` and `restore`, in the same shape as the mirror
// tree's reader (SessionSource): a session is a `session_id` (the tree's directory name), its main conversation the rows with subpath "" in seq…
import { matchSession, type NamedSession, upgradeOlderRecord } from "../transcript/records.ts";
import type { Config } from "../config/parse.ts";
import { type SessionData, sessionIdOf } from "../transcript/summary.ts";
import { describe } from "../utils/describe-error.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { type Lookup, MirrorReader, type SessionSource } from "../storage/mirror-reader.ts";
import { closeStore, openStore, redactUrl, schemaVersion, type Sql } from "./pg-client.ts";

type Rec = Record<string, unknown>;

/** The store could not be read: one line for the command to print. */
export class StoreReadError extends Error {
  override name = "StoreReadError";
}

/** Sessions in a shared store. */
export class PgReader implements SessionSource {
  private checked = false;

  constructor(
    private readonly sql: Sql,
    /** The store's URL without its password, for messages. */
    readonly where: string,
  ) {}

  /** Every session's data, most recently written first. */
  async loadAll(): Promise<SessionData[]> {
    const rows = await this.query(() =>
      this.sql<{ session_id: string; subpath: string; entry: string; bytes: number }[]>`
      SELECT session_id, subpath, entry::text AS entry, octet_length(entry::text) AS bytes
      FROM sessiontap_entries ORDER BY session_id, seq`
    );
    const last = new Map(
      (await this.query(() =>
        this.sql<{ session_id: string }[]>`
        SELECT session_id FROM sessiontap_entries GROUP BY session_id ORDER BY max(created_at) DESC, session_id`
      )).map((r, i) => [r.session_id, i]),
    );
    const sessions = new Map<string, SessionData>();
    for (const row of rows) {
      let data = sessions.get(row.session_id);
      if (data === undefined) {
        data = { dir: row.session_id, records: [], malformed: 0, files: 0, bytes: 0, agents: [], side: [] };
        sessions.set(row.session_id, data);
      }
      add(data, row);
    }
    return [...sessions.values()].sort((a, b) => (last.get(a.dir) ?? 0) - (last.get(b.dir) ?? 0));
  }

  /** One session's data (empty when the store has none of it). */
  async load(sessionId: string): Promise<SessionData> {
    const rows = await this.query(() =>
      this.sql<{ session_id: string; subpath: string; entry: string; bytes: number }[]>`
      SELECT session_id, subpath, entry::text AS entry, octet_length(entry::text) AS bytes
      FROM sessiontap_entries WHERE session_id = ${sessionId} ORDER BY seq`
    );
    const data: SessionData = { dir: sessionId, records: [], malformed: 0, files: 0, bytes: 0, agents: [], side: [] };
    for (const row of rows) add(data, row);
    return data;
  }

  /** Finds a session by its id or `session_id`, or a unique prefix of either (as the tree's reader does). */
  async lookup(query: string): Promise<Lookup> {
    const names = await this.query(() => this.sql<{ session_id: string }[]>`SELECT DISTINCT session_id FROM sessiontap_entries ORDER BY session_id`);
    const named: NamedSession[] = [];
    for (const { session_id: dir } of names) {
      // A plain id is its own session_id; only hashed names need their records read.
      const id = dir === "unknown" || dir.startsWith("inv-") ? sessionIdOf(dir, (await this.load(dir)).records) : dir;
      named.push({ dir, id });
    }
    const match = matchSession(named, query);
    return match.kind === "found" ? { kind: "found", data: await this.load(match.dir) } : match;
  }

  /** Runs a read, first checking once that the store has the schema; failures become one StoreReadError line. */
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

  /** Closes the connection. */
  async close(): Promise<void> {
    await closeStore(this.sql, 1);
  }
}

/** Adds one row to a session's data: main, side and subagent records, each in order. */
function add(data: SessionData, row: { subpath: string; entry: string; bytes: number }): void {
  data.bytes += Number(row.bytes) + 1; // as a JSONL line
  const record = upgradeOlderRecord(JSON.parse(row.entry) as Rec);
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

/** Runs `fn` on where the sessions are: the shared store when one is configured, else the mirror tree. */
export async function withSessionSource<T>(config: Readonly<Config>, fs: FsAdapter, fn: (source: SessionSource) => Promise<T>): Promise<T> {
  if (config.store === null) return await fn(new MirrorReader(fs, config.mirrorDir));
  const reader = new PgReader(openStore(config.store, { max: 1, connectTimeoutS: 10 }), redactUrl(config.store));
  try {
    return await fn(reader);
  } finally {
    await reader.close();
  }
}

/** Where the sessions are read from, for messages: the store (without its password) or the mirror root. */
export function sourceName(config: Readonly<Config>): string {
  return config.store === null ? config.mirrorDir : `the store ${redactUrl(config.store)}`;
}
