// The real Claude Code (2.1.328 and the newest pinned, 2.1.332) with `sessiontap mcp` as an MCP server (`--mcp-config`; the compiled
// binary when SESSIONTAP_BINARY is set, else the source under Bun), against a loopback model that calls its tools as a model would:
// loads them with ToolSearch where Claude Code defers them, searches for a word of the first prompt of a session Claude Code made
// through the tap and then lost (its transcript deleted), reads it back whole, then reads a long session part by part, following
// each part's offset to the end. Every part reaches the model whole (within what Claude Code hands over), nothing is lost or
// doubled, and the mirror tree is byte for byte as it was. Then the README's `claude mcp add -s user` line: written for every
// directory, and connected in `claude mcp list`. Runs under Bun (what it tests is Claude Code's side; the server's
// runtimes are test/cli/mcp.test.ts's).
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import process from "node:process";
import { CLAUDE_BIN, CLAUDE_NEXT_BIN, describeRun, findTranscripts, makeScratch, type Rec, runClaude, type Scratch } from "../support/claude.ts";
import { ROOT } from "../support/child.ts";
import { rec, writeMirror } from "../support/recover.ts";
import { driveOnce } from "../support/scenario.ts";
import { type RecordedRequest, type Reply, startStub, textReply, toolUseReply } from "../support/stub-upstream.ts";
import { startTestTap } from "../support/tap.ts";

const FIRST_PROMPT = "Plan the zanzibar rollout of the new parser";
const LONG = "10a9c0de-0000-4000-8000-00000000000a";
const TURNS = 50;
const SERVER = "mcp__sessiontap__";

/** Every file under `dir`: its bytes, mode and mtime, by path. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const s = statSync(join(d, name));
      out.set(join(d, name), `${s.mode} ${s.mtimeMs} ${s.isDirectory() ? "dir" : createHash("sha256").update(readFileSync(join(d, name))).digest("hex")}`);
      if (s.isDirectory()) walk(join(d, name));
    }
  };
  walk(dir);
  return out;
}

type Block = { type: string; id?: string; name?: string; input?: Record<string, unknown>; tool_use_id?: string; content?: unknown; text?: string };
type Message = { role: string; content: string | Block[] };
const blocks = (m: Message): Block[] => (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content);
const textOf = (content: unknown) =>
  typeof content === "string" ? content : (content as Block[]).map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("");

/** The MCP calls of a conversation as Claude Code sent it: each tool_use of this server, with the text of its result. */
function mcpCalls(messages: Message[]): { name: string; input: Record<string, unknown>; result: string; isError: boolean }[] {
  const results = new Map(messages.flatMap(blocks).filter((b) => b.type === "tool_result").map((b) => [b.tool_use_id!, b]));
  return messages.filter((m) => m.role === "assistant").flatMap(blocks).filter((b) => b.type === "tool_use" && b.name!.startsWith(SERVER))
    .filter((b) => results.has(b.id!))
    .map((b) => {
      const r = results.get(b.id!)! as Block & { is_error?: boolean };
      return { name: b.name!.slice(SERVER.length), input: b.input!, result: textOf(r.content), isError: r.is_error === true };
    });
}

/**
 * A model that looks up the lost session and reads it, then the long one to its end: each step follows from the tool results
 * Claude Code sent back. The tools are loaded with ToolSearch first unless Claude Code lists them among its tools.
 */
function model(request: RecordedRequest, n: number): Reply {
  if (request.url.split("?")[0] !== "/v1/messages") return { kind: "conversation" };
  const body = JSON.parse(new TextDecoder().decode(request.body)) as { messages?: Message[]; tools?: { name: string; defer_loading?: boolean }[] };
  if (!JSON.stringify(body.messages).includes("MCPTEST")) return { kind: "conversation" };
  const messages = body.messages!.filter((m) => m.role !== "system");
  const call = (name: string, input: Record<string, unknown>): Reply => ({ kind: "sse", chunks: toolUseReply(name, input, { toolUseId: `toolu_mcp_${n}` }) });
  const searched = messages.flatMap(blocks).some((b) => b.type === "tool_use" && b.name === "ToolSearch");
  const listed = body.tools?.some((t) => t.name === `${SERVER}search_sessions` && t.defer_loading !== true);
  if (!listed && !searched) return call("ToolSearch", { query: `select:${SERVER}search_sessions,${SERVER}read_session` });
  const calls = mcpCalls(messages);
  const last = calls.at(-1);
  if (last === undefined) return call(`${SERVER}search_sessions`, { query: "zanzibar" });
  if (last.isError) return { kind: "sse", chunks: textReply(`MCPFAILED ${last.result}`) };
  if (last.name === "search_sessions") return call(`${SERVER}read_session`, { session: /[0-9a-f-]{36}/.exec(last.result)![0] });
  const next = /call read_session with (\{[^}]*\}) for the next part\]$/.exec(last.result);
  if (next !== null) return call(`${SERVER}read_session`, JSON.parse(next[1]));
  if (last.input.session !== LONG) return call(`${SERVER}read_session`, { session: LONG });
  return { kind: "sse", chunks: textReply("MCPDONE") };
}

describe("the real Claude Code reads its lost history through sessiontap mcp", { timeout: 600_000 }, () => {
  let scratch: Scratch;
  let root: string;
  let sessionId = "";
  let tree: Map<string, string>;
  let mirrored: Rec[] = [];

  const ran = driveOnce(async () => {
    scratch = makeScratch();
    const dir = join(scratch.home, "tap");
    mkdirSync(dir);
    root = join(dir, "mirror");
    // A session made through the tap by the real Claude Code, then lost by it: its transcript deleted.
    await using upstream = await startStub();
    const tap = await startTestTap(upstream.url, { SESSIONTAP_GUARD: "off" }, {}, dir);
    try {
      const made = await runClaude(["-p", FIRST_PROMPT], { baseUrl: tap.url, scratch });
      assert.equal(made.code, 0, describeRun(made));
      await tap.settled();
    } finally {
      await tap.close();
    }
    sessionId = upstream.requests.find((r) => r.headers["x-claude-code-session-id"])!.headers["x-claude-code-session-id"];
    const [transcript] = findTranscripts(scratch.home).filter((p) => basename(p) === `${sessionId}.jsonl`);
    unlinkSync(transcript);
    mirrored = readdirSync(join(root, sessionId)).filter((n) => n.endsWith(".jsonl"))
      .flatMap((n) => readFileSync(join(root, sessionId, n), "utf8").trim().split("\n").map((l) => JSON.parse(l)));
    // And a long one, written as the tap writes its files.
    const l = { sessionId: LONG, cwd: scratch.project };
    const records: Rec[] = [];
    for (let i = 0; i < TURNS; i++) {
      records.push(rec("user", `l-u${i}`, i === 0 ? null : `l-a${i - 1}`, `prompt-${i} ${"lorem ipsum ".repeat(150)}`, l));
      records.push(rec("assistant", `l-a${i}`, `l-u${i}`, [{ type: "text", text: `answer-${i} ${"dolor sit amet ".repeat(100)}` }], l));
    }
    writeMirror(root, LONG, records);
    tree = snapshot(root);
    writeFileSync(
      join(scratch.home, "mcp.json"),
      JSON.stringify({ mcpServers: { sessiontap: { type: "stdio", ...server(), env: { SESSIONTAP_MIRROR_DIR: root } } } }),
    );
  });
  after(() => scratch?.cleanup());

  /** `sessiontap mcp` as a user's Claude Code starts it: the binary under test, else the source with this repository's Bun. */
  const server = () =>
    process.env.SESSIONTAP_BINARY
      ? { command: process.env.SESSIONTAP_BINARY, args: ["mcp"] }
      : { command: join(ROOT, "node_modules", ".bin", "bun"), args: ["run", join(ROOT, "src", "main.ts"), "mcp"] };

  for (const [version, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]]) {
    it(`${version}: finds the lost session by a word of its first prompt, reads it whole, reads a long one in parts to its end; the tree is unchanged`, async () => {
      ran();
      await using stub = await startStub();
      stub.setDefault({ kind: "fn", reply: model });
      const args = ["-p", "MCPTEST: what did I plan for zanzibar?", "--mcp-config", join(scratch.home, "mcp.json"), "--strict-mcp-config"];
      const run = await runClaude([...args, "--allowedTools", "mcp__sessiontap"], { baseUrl: stub.url, scratch, bin, timeoutMs: 300_000 });
      assert.equal(run.code, 0, describeRun(run));
      assert.match(run.stdout, /MCPDONE/, describeRun(run));
      const last = stub.requests.filter((r) => JSON.stringify(JSON.parse(new TextDecoder().decode(r.body)).messages ?? []).includes("MCPTEST")).at(-1)!;
      const calls = mcpCalls((JSON.parse(new TextDecoder().decode(last.body)).messages as Message[]).filter((m) => m.role !== "system"));
      for (const c of calls) {
        assert.equal(c.isError, false, c.result);
        assert.ok(c.result.length <= 50_000 && !c.result.includes("<persisted-output>"), `${c.name}: handed to the model whole (${c.result.length})`);
      }

      const sent = (r: RecordedRequest) => JSON.parse(new TextDecoder().decode(r.body)) as { tools?: { name: string; defer_loading?: boolean }[] };
      const first = stub.requests.find((r) => JSON.stringify(sent(r)).includes("MCPTEST"))!;
      const offered = sent(first).tools?.find((t) => t.name === `${SERVER}search_sessions`);
      const searched = JSON.stringify(JSON.parse(new TextDecoder().decode(last.body)).messages).includes('"name":"ToolSearch"');
      if (version === "2.1.332") {
        assert.ok(offered === undefined || offered.defer_loading === true, "the newest defers MCP tools");
        assert.ok(searched, "and loads them with ToolSearch before it calls them");
      }
      const [search, lost, ...parts] = calls;
      assert.equal(search.name, "search_sessions");
      assert.match(search.result, new RegExp(`^1 message in 1 session match "zanzibar"[^\\n]*\\n\\n${sessionId} · `));
      assert.match(search.result, /Claude Code's transcript: missing; the mirror has it whole/);
      assert.ok(search.result.includes(FIRST_PROMPT));
      assert.deepEqual(lost.input, { session: sessionId });
      assert.match(lost.result, /\n\[end of the session\]$/, "one part");
      const said = mirrored.filter((r) => r.type === "user" || r.type === "assistant").flatMap((r) => blocks(r.message))
        .filter((b) => b.type === "text" && !/^\s*</.test(b.text!)).map((b) => b.text!.trim());
      assert.ok(said.includes(FIRST_PROMPT) && said.length >= 2, JSON.stringify(said));
      for (const text of said) assert.ok(lost.result.includes(text), `${JSON.stringify(text)} read back`);

      assert.ok(parts.length >= 3, `${parts.length} parts of the long session`);
      let body = "";
      let offset = 0;
      for (const part of parts) {
        assert.deepEqual(part.input, offset === 0 ? { session: LONG } : { session: LONG, offset });
        const range = /\nCharacters (\d+)–(\d+) of (\d+):\n\n/.exec(part.result)!;
        assert.equal(Number(range[1]), offset);
        body += part.result.slice(range.index + range[0].length, range.index + range[0].length + Number(range[2]) - offset);
        offset = Number(range[2]);
      }
      assert.match(parts.at(-1)!.result, /\n\[end of the session\]$/);
      for (let i = 0; i < TURNS; i++) {
        for (const marker of [`prompt-${i} `, `answer-${i} `]) assert.equal(body.split(marker).length, 2, `${marker} once`);
        if (i > 0) assert.ok(body.indexOf(`prompt-${i} `) > body.indexOf(`answer-${i - 1} `), `turn ${i} in order`);
      }
      assert.deepEqual(snapshot(root), tree, "the mirror tree is byte for byte as it was");
    });
  }

  it("the documented `claude mcp add -s user sessiontap -- sessiontap mcp` adds it for every directory, and Claude Code connects to it", async () => {
    ran();
    const { command, args } = server();
    const opts = { baseUrl: "http://127.0.0.1:9", scratch, env: { SESSIONTAP_MIRROR_DIR: root } };
    for (const bin of [CLAUDE_BIN, CLAUDE_NEXT_BIN]) {
      const add = await runClaude(["mcp", "add", "-s", "user", "sessiontap", "--", command, ...args], { ...opts, bin });
      assert.equal(add.code, 0, describeRun(add));
      const config = JSON.parse(readFileSync(join(scratch.home, ".claude.json"), "utf8"));
      assert.deepEqual(config.mcpServers.sessiontap, { type: "stdio", command, args, env: {} }, "the user's scope: every directory");
      const list = await runClaude(["mcp", "list"], { ...opts, bin });
      assert.match(list.stdout, /^sessiontap: .* - ✔ Connected$/m, describeRun(list));
      assert.equal((await runClaude(["mcp", "remove", "-s", "user", "sessiontap"], { ...opts, bin })).code, 0);
    }
    assert.deepEqual(snapshot(root), tree, "the mirror tree is byte for byte as it was");
  });
});
