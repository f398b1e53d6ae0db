// The environment, wherever the client puts it (docs/DESIGN.md "Where the environment travels"), with the
// real Claude Code through a real tap in a git repository: 2.1.328, and the newest pinned release (2.1.332)
// with its default model and with `--model claude-sonnet-4-5` (which sends its environment block only in a
// reminder of the first user message). Each runs a tool call, a `--resume` follow-up, `/compact` and a
// prompt after it: every record the tap wrote for the session's main conversation carries the working
// directory, git branch, entrypoint and version Claude Code wrote into its own records — on every request,
// the resumed and compacted ones included. Runs under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { basename } from "node:path";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { readTree, type TestTap, withTap } from "../support/tap.ts";
import {
  CLAUDE_BIN,
  CLAUDE_NEXT_BIN,
  describeRun,
  findTranscripts,
  makeScratch,
  pollUntil,
  readJsonl,
  type Rec,
  runClaude,
  type Scratch,
} from "../support/claude.ts";

const BRANCH = "feature-env";
const CLIENTS = [
  { name: "2.1.328", bin: CLAUDE_BIN, model: [] as string[], version: "2.1.328" },
  { name: "2.1.332 (default model)", bin: CLAUDE_NEXT_BIN, model: [], version: "2.1.332" },
  { name: "2.1.332 --model claude-sonnet-4-5", bin: CLAUDE_NEXT_BIN, model: ["--model", "claude-sonnet-4-5"], version: "2.1.332" },
];

interface Seen {
  scratch: Scratch;
  sessionId: string;
  /** Claude Code's own user and assistant records. */
  own: Rec[];
  /** The tap's records of the main conversation. */
  main: Rec[];
  /** Whether the first request carried the environment only in the first user message. */
  inReminder: boolean;
}

describe("cwd, gitBranch, entrypoint and version from the real clients (two versions, two models)", { timeout: 240_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  const seen = new Map<string, Seen>();

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    stub.setDefault({ kind: "conversation", summaries: true });
    for (const client of CLIENTS) {
      const scratch = makeScratch();
      execFileSync("git", ["init", "-q", "-b", BRANCH], { cwd: scratch.project });
      const opts = { baseUrl: tap.url, scratch, bin: client.bin, timeoutMs: 60_000 };
      const first = stub.requests.length;
      const run1 = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash", ...client.model], opts);
      assert.equal(run1.code, 0, `${client.name}: ${describeRun(run1)}`);
      const sessionId = stub.requests[first].headers["x-claude-code-session-id"];
      for (const prompt of ["a follow-up", "/compact", "after the compaction"]) {
        const run = await runClaude(["-p", "--resume", sessionId, prompt, ...client.model], opts);
        assert.equal(run.code, 0, `${client.name} ${prompt}: ${describeRun(run)}`);
      }
      const body = JSON.parse(new TextDecoder().decode(stub.requests[first].body));
      const inReminder = !JSON.stringify(body.system).includes("Primary working directory") &&
        !body.messages.some((m: Rec) => m.role === "system");
      const files = findTranscripts(scratch.home).filter((p) => basename(p) === `${sessionId}.jsonl`);
      assert.equal(files.length, 1, `${client.name}: ${JSON.stringify(findTranscripts(scratch.home))}`);
      const own = readJsonl(files[0]).filter((r) => r.type === "user" || r.type === "assistant");
      const main = await pollUntil(
        () => [...readTree(tap.root).entries()].filter(([p]) => p.startsWith(`${sessionId}/`) && p.split("/").length === 2).flatMap(([, r]) => r) as Rec[],
        (records) => records.filter((r) => r.type === "assistant").length >= 4,
        5_000,
        `${client.name}: four answers in the main conversation`,
      );
      seen.set(client.name, { scratch, sessionId, own, main, inReminder });
    }
  });

  after(async () => {
    for (const s of seen.values()) s.scratch.cleanup();
  });

  it("claude-sonnet-4-5 on 2.1.332 sends its environment in the first user message; the others in a system message", () => {
    assert.deepEqual(CLIENTS.map((c) => seen.get(c.name)!.inReminder), [false, false, true]);
  });

  for (const client of CLIENTS) {
    it(`${client.name}: every record of every request, resumed and compacted too, as Claude Code wrote its own`, () => {
      const { own, main, scratch } = seen.get(client.name)!;
      assert.ok(own.length >= 8, `Claude Code's own records: ${own.length}`);
      for (const r of own) {
        assert.deepEqual([r.cwd, r.gitBranch, r.version], [scratch.project, BRANCH, client.version], "Claude Code's own record");
      }
      assert.ok(main.some((r) => r.type === "system" && r.subtype === "compact_boundary"), "the compaction was mirrored");
      const conversation = main.filter((r) => r.type === "user" || r.type === "assistant");
      assert.ok(conversation.length >= 8, `mirror records: ${conversation.length}`);
      for (const r of main) {
        const where = `${r.type} ${r.uuid}`;
        assert.equal(r.cwd, own[0].cwd, where);
        assert.equal(r.gitBranch, own[0].gitBranch, where);
        assert.equal(r.entrypoint, own[0].entrypoint, where);
        assert.equal(r.version, own[0].version, where);
      }
    });
  }
});
