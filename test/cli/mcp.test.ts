// `sessiontap mcp` at the protocol level, with the MCP SDK's own client (Client + StdioClientTransport) against the real
// process (the compiled binary when SESSIONTAP_BINARY is set): every tool on a mirror of a lost session, a stubbed one, one
// behind, an intact one, one with a compaction and a rewind, and one long enough for several parts; every bad input a tool
// error in words, the server answering on; the mirror tree byte for byte as it was; nothing on stdout but protocol messages;
// the end of stdin or SIGINT ends it with 0. Runs under Bun and Deno.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import process from "node:process";
import { MAX_TEXT } from "../../src/cli/mcp.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { type Answer, callThenClose, mcpClient, startMcp } from "../support/mcp.ts";
import { rec, scratchDir, writeMirror } from "../support/recover.ts";

type Rec = Record<string, unknown>;
const ID = {
  lost: "a1a1a1a1-0000-4000-8000-000000000001",
  stub: "b2b2b2b2-0000-4000-8000-000000000002",
  behind: "c3c3c3c3-0000-4000-8000-000000000003",
  intact: "d4d4d4d4-0000-4000-8000-000000000004",
  shapes: "e5e5e5e5-0000-4000-8000-000000000005",
  long: "a1a1a1a1-0000-4000-8000-000000000006",
} as const;
const TURNS = 60;
const CRABS = 30_000;

/** Every file under `dirs`: its bytes, mode and mtime, by path. */
function snapshot(...dirs: string[]): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const path = `${d}/${name}`;
      const s = statSync(path);
      out.set(path, `${s.mode} ${s.mtimeMs} ${s.isDirectory() ? "dir" : createHash("sha256").update(readFileSync(path)).digest("hex")}`);
      if (s.isDirectory()) walk(path);
    }
  };
  dirs.forEach(walk);
  return out;
}

describe("sessiontap mcp with the MCP SDK's client", { timeout: 120_000 }, () => {
  const scratch = scratchDir("sessiontap-mcp-");
  const root = `${scratch.dir}/mirror`;
  const claude = `${scratch.dir}/claude`;
  let client: Awaited<ReturnType<typeof mcpClient>>;
  let before_: Map<string, string>;
  const call = (name: string, args: Record<string, unknown>): Promise<Answer> => client.call(name, args);

  before(async () => {
    mkdirSync(root, { mode: 0o700 });
    const cc = (cwd: string, id: string, records: Rec[]) => {
      mkdirSync(`${claude}/projects/${encodeProjectDir(cwd)}`, { recursive: true });
      writeFileSync(`${claude}/projects/${encodeProjectDir(cwd)}/${id}.jsonl`, records.map((r) => JSON.stringify(r) + "\n").join(""));
    };
    const turn = (id: string, cwd: string, n: number, prompt: string, answer: string, parent: string | null) => [
      rec("user", `${id}-u${n}`, parent, prompt, { sessionId: id, cwd }),
      rec("assistant", `${id}-a${n}`, `${id}-u${n}`, [{ type: "text", text: answer }], { sessionId: id, cwd }),
    ];
    writeMirror(root, ID.lost, turn(ID.lost, "/p/alpha", 1, "Fix the zanzibar parser, it drops the last token", "The zanzibar parser now keeps it.", null));
    const stub = turn(ID.stub, "/p/beta", 1, "Explain the zanzibar cache", "It keeps parsed files by size and mtime.", null);
    writeMirror(root, ID.stub, stub);
    cc("/p/beta", ID.stub, [{ type: "summary", summary: "stub", leafUuid: "x" }]);
    const behind = [
      ...turn(ID.behind, "/p/beta", 1, "first prompt", "ok 1", null),
      ...turn(ID.behind, "/p/beta", 2, "second prompt", "ok 2", `${ID.behind}-a1`),
    ];
    writeMirror(root, ID.behind, behind);
    cc("/p/beta", ID.behind, behind.slice(2));
    const intact = turn(ID.intact, "/p/gamma", 1, "Rename the gamma module", "Renamed.", null);
    writeMirror(root, ID.intact, intact);
    cc("/p/gamma", ID.intact, intact);
    // A compaction (Claude Code's boundary, then its summary) and a rewind after it: the narwhal prompt was left for the other.
    const s = { sessionId: ID.shapes, cwd: "/p/delta" };
    writeMirror(root, ID.shapes, [
      rec("user", "s-u1", null, "Draft the walrus migration plan", s),
      rec("assistant", "s-a1", "s-u1", [{ type: "text", text: "Plan drafted." }, {
        type: "tool_use",
        id: "toolu_1",
        name: "Bash",
        input: { command: "cat plan.log" },
      }], s),
      rec("user", "s-r1", "s-a1", [{
        type: "tool_result",
        tool_use_id: "toolu_1",
        content: Array.from({ length: 50 }, (_, i) => `log line ${i + 1}`).join("\n"),
      }], s),
      rec("assistant", "s-a1b", "s-r1", [{ type: "text", text: "The log is clean." }], s),
      rec("system", "s-b1", null, "", { ...s, subtype: "compact_boundary", logicalParentUuid: "s-a1b" }),
      rec("user", "s-sum", "s-b1", "This session is being continued from a previous conversation. Summary: a plan.", { ...s, isCompactSummary: true }),
      rec("assistant", "s-a2", "s-sum", [{ type: "text", text: "Continuing." }], s),
      rec("user", "s-u3", "s-a2", "try the narwhal approach", s),
      rec("user", "s-u4", "s-a2", "try the other approach", s),
      rec("assistant", "s-a4", "s-u4", [{ type: "text", text: "Done the other way." }], s),
    ]);
    // Long: numbered turns, and one answer that is a single line of astral characters longer than a part.
    const l = { sessionId: ID.long, cwd: "/p/long" };
    const long: Rec[] = [];
    let parent: string | null = null;
    for (let i = 0; i < TURNS; i++) {
      const answer = i === TURNS / 2 ? "🦀".repeat(CRABS) : `answer-${i} ` + "dolor sit amet ".repeat(100);
      long.push(rec("user", `l-u${i}`, parent, `prompt-${i} ` + "lorem ipsum ".repeat(150), l));
      long.push(rec("assistant", `l-a${i}`, `l-u${i}`, [{ type: "text", text: answer }], l));
      parent = `l-a${i}`;
    }
    writeMirror(root, ID.long, long);
    before_ = snapshot(root, claude);
    client = await mcpClient(["--mirror-dir", root], { HOME: scratch.dir, CLAUDE_CONFIG_DIR: claude });
  });

  after(async () => {
    await client?.client.close();
    scratch.cleanup();
  });

  it("lists its three tools, each with the JSON Schema of its arguments", async () => {
    const { tools } = await client.client.listTools();
    assert.deepEqual(tools.map((t) => [t.name, t.inputSchema.required]), [
      ["search_sessions", ["query"]],
      ["read_session", ["session"]],
      ["list_sessions", []],
    ]);
    const read = tools.find((t) => t.name === "read_session")!;
    const limit = read.inputSchema.properties!.limit as Record<string, unknown>;
    assert.deepEqual(limit, {
      type: "integer",
      description: limit.description,
      minimum: 1000,
      maximum: MAX_TEXT,
    });
    assert.match(read.description!, new RegExp(`parts of at most ${MAX_TEXT} characters`));
  });

  it("list_sessions: most recent first, each with its project, counts, cost and Claude Code's transcript as the one judge says", async () => {
    const r = await call("list_sessions", {});
    assert.equal(r.isError, false);
    const order = [...r.text.matchAll(/^([0-9a-f-]{36}) · /gm)].map((m) => m[1]);
    assert.deepEqual(order, [ID.long, ID.shapes, ID.intact, ID.behind, ID.stub, ID.lost]);
    const entry = (id: string) => r.text.slice(r.text.indexOf(`${id} · `)).split("\n").slice(0, 2).join("\n");
    assert.match(
      entry(ID.lost),
      /\/p\/alpha\n {2}Fix the zanzibar parser, it drops the last token · 1 prompt and 1 answer · \$0\.00 · Claude Code's transcript: missing; /,
    );
    assert.match(entry(ID.lost), /the mirror has it whole \(sessiontap restore a1a1a1a1-0000-4000-8000-000000000001 puts it back for claude --resume\)$/);
    assert.match(entry(ID.stub), /Claude Code's transcript: stub; the mirror has it whole/);
    assert.match(entry(ID.behind), /Claude Code's transcript: behind \(lacks 1 prompt and 1 answer of the mirror's current branch\); the mirror/);
    assert.match(entry(ID.intact), /Claude Code's transcript: intact$/);
    assert.match(r.text, /^6 mirrored sessions, most recent first \(times UTC\):/);
  });

  it("list_sessions: a project narrows it, a limit cuts it and says how many more there are", async () => {
    const beta = await call("list_sessions", { project: "/P/BETA" });
    assert.deepEqual([...beta.text.matchAll(/^([0-9a-f-]{36}) · /gm)].map((m) => m[1]), [ID.behind, ID.stub]);
    const two = await call("list_sessions", { limit: 2 });
    assert.equal([...two.text.matchAll(/^[0-9a-f-]{36} · /gm)].length, 2);
    assert.match(two.text, /\(4 more not shown: ask with a larger limit, or a project\)$/);
    assert.equal((await call("list_sessions", { project: "nowhere" })).text, `No mirrored session's project contains "nowhere".`);
  });

  it("search_sessions: a lost session and a stubbed one are found by a word of their first prompt, newest first, and say so", async () => {
    const r = await call("search_sessions", { query: "ZANZIBAR" });
    assert.equal(r.isError, false);
    assert.match(r.text, /^3 messages in 2 sessions match "ZANZIBAR", newest first \(times UTC\)\. read_session with a session id/);
    const items = r.text.split("\n\n").slice(1);
    assert.equal(items.length, 3);
    const stub = `^${ID.stub} · .* · /p/beta\n.*Claude Code's transcript: stub; .*\n {2}user at \\S+ \\S+:\n {2}Explain the zanzibar cache$`;
    assert.match(items[0], new RegExp(stub));
    assert.match(
      items[1],
      new RegExp(`^${ID.lost} · .* · /p/alpha\n.*Claude Code's transcript: missing; .*\n {2}assistant at .*:\n {2}The zanzibar parser now`),
    );
    assert.match(items[2], new RegExp(`^${ID.lost} · .* · /p/alpha\n.*Claude Code's transcript: missing; .*\n {2}user at .*:\n {2}Fix the zanzibar parser`));
    assert.match((await call("search_sessions", { query: "keeps zanzibar" })).text, /^1 message in 1 session match "keeps zanzibar"/, "every word, anywhere");
    const alpha = await call("search_sessions", { query: "zanzibar", project: "alpha" });
    assert.match(alpha.text, /^2 messages in 1 session match "zanzibar" in projects containing "alpha"/);
    const one = await call("search_sessions", { query: "zanzibar", limit: 1 });
    assert.match(one.text, /\(2 more not shown: ask with a larger limit, more words, or a project\)$/);
    assert.equal((await call("search_sessions", { query: "quetzalcoatl" })).text, `Nothing matches "quetzalcoatl" in 6 mirrored sessions.`);
  });

  it("search_sessions: text from before a compaction and from a branch the conversation left is found and marked so", async () => {
    const mark = async (query: string) => {
      const r = await call("search_sessions", { query });
      assert.match(r.text, new RegExp(`^1 message in 1 session match`), query);
      return r.text.split("\n")[4];
    };
    assert.match(await mark("walrus"), /^ {2}user at .* · from before a compaction \(no longer in that conversation's context\):$/);
    assert.match(await mark("narwhal"), /^ {2}user at .* · on a branch the conversation left \(rewound or retried\):$/);
    assert.match(await mark("other approach"), /^ {2}user at \S+ \S+:$/);
    assert.match(await mark('"log line 37"'), /^ {2}tool result at .* · from before a compaction/);
  });

  it("read_session by a unique prefix: prompts, answers, a tool call with its result shortened and sized, the compaction and the other branch marked", async () => {
    const r = await call("read_session", { session: "e5e5" });
    assert.equal(r.isError, false);
    const text = r.text;
    assert.match(text, new RegExp(`^Session ${ID.shapes} · /p/delta · Draft the walrus migration plan\n`));
    assert.match(text, /Claude Code's transcript: missing; the mirror has it whole/);
    const order = [
      "User · ",
      "  Draft the walrus migration plan",
      "  Plan drafted.",
      "  ● Bash: cat plan.log",
      "    ⎿ log line 1",
      "      log line 4",
      "      … 46 more lines",
      "  The log is clean.",
      "──── Conversation compacted ────",
      "Compaction summary · ",
      "  This session is being continued from a previous conversation. Summary: a plan.",
      "  Continuing.",
      "┆ Other branch (forks after the message above; not the current branch)",
      "┆   try the narwhal approach",
      "  try the other approach",
      "  Done the other way.",
      "[end of the session]",
    ];
    let at = 0;
    for (const piece of order) {
      const found = text.indexOf(piece, at);
      assert.ok(found >= at, `${JSON.stringify(piece)} after position ${at} in:\n${text}`);
      at = found + piece.length;
    }
    assert.doesNotMatch(text, /log line 5\b|--full/, "shortened, with no hint of a flag a model cannot give");
  });

  it("read_session of a long session: bounded parts, each naming the offset of the next; followed to the end, nothing is lost or doubled", async () => {
    let offset = 0;
    let body = "";
    const parts: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await call("read_session", { session: ID.long, ...(offset === 0 ? {} : { offset }) });
      assert.equal(r.isError, false, r.text);
      assert.ok(r.text.length <= 50_000, `part ${i}: ${r.text.length} characters, more than Claude Code hands a model whole`);
      const range = /\nCharacters (\d+)–(\d+) of (\d+):\n\n/.exec(r.text)!;
      assert.equal(Number(range[1]), offset);
      const end = Number(range[2]);
      assert.ok(end - offset <= MAX_TEXT);
      const part = r.text.slice(range.index + range[0].length, range.index + range[0].length + end - offset);
      assert.doesNotMatch(part, /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/, "a character split between parts");
      body += part;
      parts.push(r.text);
      if (end === Number(range[3])) {
        assert.match(r.text, /\n\[end of the session\]$/);
        break;
      }
      assert.ok(
        r.text.endsWith(`[${Number(range[3]) - end} more characters: call read_session with {"session":"${ID.long}","offset":${end}} for the next part]`),
      );
      offset = end;
    }
    assert.ok(parts.length >= 4, `${parts.length} parts`);
    for (let i = 0; i < TURNS; i++) {
      for (const marker of [`prompt-${i} `, ...(i === TURNS / 2 ? [] : [`answer-${i} `])]) {
        assert.equal(body.split(marker).length, 2, `${marker} once`);
        if (i > 0) assert.ok(body.indexOf(marker) > body.indexOf(`prompt-${i - 1} `), `${marker} in order`);
      }
    }
    assert.equal(body.match(/🦀/gu)!.length, CRABS, "the long line whole, across parts");
    const limited = await call("read_session", { session: ID.long, offset: 1000, limit: 5000 });
    const range = /\nCharacters (\d+)–(\d+) of/.exec(limited.text)!;
    assert.ok(Number(range[2]) - 1000 <= 5000 && Number(range[2]) - 1000 > 2500, range[0]);
    assert.match(limited.text, new RegExp(`\\{"session":"${ID.long}","offset":${range[2]},"limit":5000\\}`), "the next part asked with the same limit");
  });

  it("bad input is a tool error that says what is wrong, and the server answers on", async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ["search_sessions", {}, `search_sessions needs "query"`],
      ["search_sessions", { query: "" }, `"query" is empty`],
      ["search_sessions", { query: "   " }, `"query" is empty`],
      ["search_sessions", { query: "x".repeat(501) }, `"query" is too long: 501 characters, at most 500`],
      ["search_sessions", { query: 42 }, `"query" must be a string, got 42`],
      ["search_sessions", { query: "zanzibar", limit: 0 }, `"limit" must be a whole number from 1 to 50, got 0`],
      ["search_sessions", { query: "zanzibar", limit: 2.5 }, `"limit" must be a whole number from 1 to 50, got 2.5`],
      ["search_sessions", { query: "zanzibar", sessions: 3 }, `search_sessions takes no "sessions"; it takes query, project, limit`],
      ["read_session", { session: "ffff" }, `no mirrored session matches "ffff" (list_sessions and search_sessions give the ids)`],
      ["read_session", { session: "a1a1" }, `"a1a1" matches 2 sessions (${ID.lost}, ${ID.long}): give more of the id`],
      ["read_session", { session: ID.lost, offset: 10_000_000 }, `offset 10000000 is past the end: the session's text is `],
      ["read_session", { session: ID.lost, offset: -1 }, `"offset" must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}, got -1`],
      ["read_session", { session: ID.lost, limit: 100_000 }, `"limit" must be a whole number from 1000 to ${MAX_TEXT}, got 100000`],
      ["read_session", { session: ID.lost, offset: "5" }, `"offset" must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}, got "5"`],
      ["list_sessions", { limit: 101 }, `"limit" must be a whole number from 1 to 100, got 101`],
      ["forget_sessions", {}, `there is no tool "forget_sessions"; there are search_sessions, read_session, list_sessions`],
    ];
    for (const [tool, args, message] of cases) {
      const r = await call(tool, args);
      assert.equal(r.isError, true, `${tool} ${JSON.stringify(args)}: ${r.text}`);
      assert.ok(r.text.startsWith(message), `${tool} ${JSON.stringify(args)}: ${r.text}`);
    }
    assert.equal((await call("list_sessions", { limit: 1 })).isError, false, "still serving");
  });

  it("read only: after every call above, the mirror and Claude Code's directory are byte for byte, mode and mtime as they were", () => {
    const now = snapshot(root, claude);
    assert.deepEqual([...now].filter(([k, v]) => before_.get(k) !== v), []);
    assert.deepEqual(now, before_);
  });
});

describe("sessiontap mcp as a process", { timeout: 60_000 }, () => {
  const scratch = scratchDir("sessiontap-mcp-process-");
  after(() => scratch.cleanup());
  const env = { HOME: scratch.dir, SESSIONTAP_MIRROR_DIR: `${scratch.dir}/no-mirror` };

  it("stdout carries protocol messages only; a mirror that is not there is a tool error naming it; the end of stdin ends it with 0", async () => {
    const { exit, stderr, lines } = await callThenClose([], env, "list_sessions", {});
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.equal(stderr, `sessiontap mcp: serving ${scratch.dir}/no-mirror on stdio, read-only\n`);
    assert.deepEqual(lines.map((l) => [l.jsonrpc, l.id]), [["2.0", 1], ["2.0", 2]]);
    assert.equal(lines[0].result.serverInfo.name, "sessiontap");
    assert.deepEqual(lines[1].result, {
      content: [{ type: "text", text: `there is no mirror at ${scratch.dir}/no-mirror (SESSIONTAP_MIRROR_DIR): nothing was mirrored there` }],
      isError: true,
    });
  });

  it("SIGINT (how Claude Code stops it) ends it with 0, stdin still open", async () => {
    const { child, exited, serving } = startMcp([], env);
    await serving;
    process.kill(child.pid!, "SIGINT");
    assert.deepEqual(await exited, { code: 0, signal: null });
  });
});
