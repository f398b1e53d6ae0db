// Issue 7: `sessiontap store migrate`, the store settings' usage errors, and `list`, `show`, `export`,
// `restore` and `mcp` reading the shared store: given a session written to both the tree and the store, every
// command prints the same from either, and restore writes the same Claude Code transcript.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { type TestTap, withTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";
import { cli, scratchDir } from "../support/recover.ts";
import { callThenClose, mcpClient } from "../support/mcp.ts";
import { freshDatabase, pollAsync, storedRows, storeStatus, type TestDatabase } from "../support/pg.ts";

const NOW = Date.parse("2026-11-30T12:00:00.000Z");

describe("store migrate and the store settings", () => {
  const dbs: TestDatabase[] = [];
  after(async () => {
    for (const db of dbs) await db.drop();
  });

  it("migrate creates the schema, then has nothing to do; two at once both succeed and apply it once", async () => {
    const db = await freshDatabase("migrate");
    dbs.push(db);
    const first = await cli(["store", "migrate", "--store", db.url]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /from schema version none to 1 \(applied 1\)/);
    const again = await cli(["store", "migrate"], { SESSIONTAP_STORE: db.url });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /at schema version 1; nothing to do/);
    const db2 = await freshDatabase("migrate2");
    dbs.push(db2);
    const both = await Promise.all([cli(["store", "migrate", "--store", db2.url]), cli(["store", "migrate", "--store", db2.url])]);
    assert.deepEqual(both.map((r) => r.code), [0, 0], both.map((r) => r.stderr).join(""));
    const versions = await db2.sql`SELECT version FROM sessiontap_schema`;
    assert.deepEqual(versions.map((v) => v.version), [1]);
    const [{ type }] = await db2
      .sql`SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = 'sessiontap_entries'::regclass AND attname = 'entry'`;
    assert.equal(type, "json", "entries are json, not jsonb");
  });

  it("usage errors name the setting, exit 2, and never echo a password", async () => {
    const bad = await cli(["list", "--store", "mysql://user:hunter2@db/x"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /store \(--store \/ SESSIONTAP_STORE\) must be a postgres:\/\/ or postgresql:\/\/ URL/);
    assert.ok(!bad.stderr.includes("hunter2"));
    assert.equal((await cli(["list"], { SESSIONTAP_STORE: "not a url" })).code, 2);
    const only = await cli(["list"], { SESSIONTAP_STORE_ONLY: "yes" });
    assert.equal(only.code, 2);
    assert.match(only.stderr, /SESSIONTAP_STORE_ONLY must be true or false/);
    assert.equal((await cli(["store", "migrate"])).code, 2, "migrate without a store");
    assert.equal((await cli(["store", "drop", "--store", "postgres://x@127.0.0.1:1/x"])).code, 2, "an unknown subcommand");
  });

  it("an unreachable store is one line and exit 1, its password hidden", async () => {
    const r = await cli(["store", "migrate", "--store", "postgresql://me:hunter2@127.0.0.1:1/none"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot migrate the store postgresql:\/\/me:\*\*\*@127\.0\.0\.1:1\/none/);
    assert.ok(!r.stderr.includes("hunter2"));
    const list = await cli(["list", "--store", "postgresql://me:hunter2@127.0.0.1:1/none"]);
    assert.equal(list.code, 1);
    assert.match(list.stderr, /cannot read the store/);
    assert.ok(!list.stderr.includes("hunter2"));
  });
});

describe("list, show, export and restore read the store like the tree", () => {
  let tap: TestTap;
  let db: TestDatabase;
  let scratch: { dir: string; cleanup(): void };
  const session = "0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d";
  const fromTree = (args: string[], claudeDir = `${scratch.dir}/claude`) =>
    cli([...args, "--mirror-dir", tap.root], { CLAUDE_CONFIG_DIR: claudeDir }, { home: scratch.dir, cwd: scratch.dir, clock: () => NOW });
  const fromStore = (args: string[], claudeDir = `${scratch.dir}/claude`) =>
    cli([...args, "--mirror-dir", `${scratch.dir}/no-tree-here`], { SESSIONTAP_STORE: db.url, CLAUDE_CONFIG_DIR: claudeDir }, {
      home: scratch.dir,
      cwd: scratch.dir,
      clock: () => NOW,
    });

  before(async () => {
    db = await freshDatabase("commands");
    scratch = scratchDir("sessiontap-store-cmds-");
    mkdirSync(`${scratch.dir}/project`);
  });
  withTap((started) => ({ tap } = started), () => ({ env: { SESSIONTAP_STORE: db.url } }));
  before(async () => {
    await storeStatus(tap.url);
    const c = new Conversation(tap, session, { system: `Primary working directory: ${scratch.dir}/project` });
    await c.say("hello store");
    await c.say("RUNTOOL please");
    const toolUse = (c.messages.at(-1)!.content as { type: string; id: string }[]).find((b) => b.type === "tool_use")!;
    await c.say([{ type: "tool_result", tool_use_id: toolUse.id, content: "hi-from-tool \u0000 🦀" }]);
    const side = new Conversation(tap, session, { system: "title", body: { tools: [] } });
    side.messages.push(...c.messages);
    await side.say("a title please");
    // A subagent, and Claude Code's title request (a JSON title asked for): restore writes both back.
    await new Conversation(tap, session, { headers: { "x-claude-code-agent-id": "a0store1" }, system: `Primary working directory: ${scratch.dir}/project` })
      .say("SUBTASK: look");
    const titleFormat = { format: { type: "json_schema", schema: { type: "object", properties: { title: { type: "string" } } } } };
    await new Conversation(tap, session, { system: "You are Claude Code.", body: { tools: [], output_config: titleFormat } }).say(
      "<session>\nhello store\n</session>\n\nWrite the title.",
    );
    await pollAsync(() => storedRows(db.sql), (r) => r.length >= 12);
  });
  after(async () => {
    await db?.drop();
    scratch?.cleanup();
  });

  it("list --json, show --json and every export format are the same from the store as from the tree", async () => {
    for (
      const args of [["list", "--json"], ["show", session, "--json"], ["show", session.slice(0, 6)], ["export", session], [
        "export",
        session,
        "--format",
        "jsonl",
      ], ["export", session, "--format", "html"]]
    ) {
      const [tree, store] = [await fromTree(args), await fromStore(args)];
      assert.equal(store.code, 0, store.stderr);
      assert.equal(tree.code, 0, tree.stderr);
      if (args[0] === "show" && args.length === 2) {
        assert.equal(store.stdout.replace(/^Store .*\n/m, ""), tree.stdout.replace(/^Mirror .*\n/m, ""), args.join(" "));
        assert.match(store.stdout, /^Store\s+0b1c2d3e-.* in postgres:\/\//m);
      } else {
        assert.equal(store.stdout, tree.stdout, args.join(" "));
      }
    }
    const listed = JSON.parse((await fromStore(["list", "--json"])).stdout);
    assert.equal(listed.length, 1);
    assert.equal(listed[0].sessionId, session);
    assert.equal(listed[0].sideAnswers, 2, "two side exchanges: a tool-less request, and Claude Code's own title request");
  });

  it("restore from the store writes the same Claude Code transcript as restore from the tree", async () => {
    const a = await fromTree(["restore", session], `${scratch.dir}/claude-a`);
    const b = await fromStore(["restore", session.slice(0, 8)], `${scratch.dir}/claude-b`);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    assert.equal(b.stdout.replaceAll("claude-b", "claude-a"), a.stdout);
    const project = `${scratch.dir}/project`.replace(/[^A-Za-z0-9]/g, "-");
    const written = readFileSync(`${scratch.dir}/claude-b/projects/${project}/${session}.jsonl`, "utf8");
    assert.equal(written, readFileSync(`${scratch.dir}/claude-a/projects/${project}/${session}.jsonl`, "utf8"));
    assert.ok(written.includes("hi-from-tool \\u0000 🦀"));
    assert.equal(written.trim().split("\n").length, 8, "the title record, six records and the last prompt");
    assert.match(written.trim().split("\n").at(-1)!, /^\{"type":"last-prompt",/);
    assert.match(written.split("\n")[0], /^\{"type":"ai-title","aiTitle":"Stub title \(reply \d+\)","sessionId":"0b1c2d3e-/);
    const agent = `projects/${project}/${session}/subagents/agent-a0store1.jsonl`;
    assert.equal(readFileSync(`${scratch.dir}/claude-b/${agent}`, "utf8"), readFileSync(`${scratch.dir}/claude-a/${agent}`, "utf8"));
    assert.ok(readFileSync(`${scratch.dir}/claude-b/${agent}`, "utf8").includes("SUBTASK: look"));
  });

  it("sessiontap mcp answers from the store as from the tree, and ends when stdin closes: the store's connection does not keep it", async () => {
    const ask = async (args: string[], env: Record<string, string>) => {
      const mcp = await mcpClient(args, { HOME: scratch.dir, CLAUDE_CONFIG_DIR: `${scratch.dir}/claude`, ...env });
      try {
        return [
          await mcp.call("list_sessions", {}),
          await mcp.call("search_sessions", { query: "hello store" }),
          await mcp.call("read_session", { session: session.slice(0, 8) }),
        ];
      } finally {
        await mcp.client.close();
      }
    };
    const tree = await ask(["--mirror-dir", tap.root], {});
    const store = await ask(["--mirror-dir", `${scratch.dir}/no-tree-here`], { SESSIONTAP_STORE: db.url });
    assert.deepEqual(store, tree);
    assert.match(store[1].text, /^1 message in 1 session match "hello store"/);
    assert.ok(store[2].text.includes("hi-from-tool"));
    const closed = await callThenClose([], { SESSIONTAP_STORE: db.url, HOME: scratch.dir }, "list_sessions", {});
    assert.deepEqual(closed.exit, { code: 0, signal: null });
    assert.match(closed.stderr, /^sessiontap mcp: serving the store postgres:\/\/\S+ on stdio, read-only\n$/);
    assert.match(closed.lines[1].result.content[0].text, /^1 mirrored session, most recent first/);
  });

  it("unknown sessions and a store without the schema are one line and exit 1", async () => {
    const none = await fromStore(["show", "ffffffff"]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no mirrored session matches "ffffffff" in the store postgres:\/\//);
    const empty = await freshDatabase("noschema");
    try {
      const r = await cli(["list", "--store", empty.url]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /has no sessiontap schema yet \(sessiontap store migrate creates it\)/);
    } finally {
      await empty.drop();
    }
  });
});
