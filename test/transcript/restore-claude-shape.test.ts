// Restore writes what Claude Code 2.1.328 writes: injected context split off each prompt into records of
// its own (reminders and caveats hidden with isMeta), so they join back into the very message that was
// sent; subagents at <project>/<session>/subagents/agent-<id>.jsonl; the session's ai-title record when
// the mirror saw Claude Code's title request; a fresh modification time; and a torn last line named.
// The real interactive capture (a tool call, /compact, a rewind) is replayed through a tap for the first.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { generatedTitle } from "../../src/transcript/summary.ts";
import type { StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";
import { cli, rec, replayCapture, scratchDir, writeMirror } from "../support/recover.ts";
import type { Rec } from "../support/claude.ts";

const NOW = Date.parse("2026-11-30T12:00:00.000Z");
const readLines = (path: string): Rec[] => readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));

describe("restore in Claude Code's own shape", { timeout: 60_000 }, () => {
  const scratch = scratchDir();
  const claude = `${scratch.dir}/claude`;
  const cwd = `${scratch.dir}/proj`;
  const project = `${claude}/projects/${encodeProjectDir(cwd)}`;
  let stub: StubUpstream;
  let tap: TestTap;
  let captured = "";
  const restore = (root: string, ...args: string[]) => cli(["restore", ...args, "--mirror-dir", root, "--claude-dir", claude], {}, { cwd, clock: () => NOW });

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    captured = await replayCapture(tap, stub);
    await tap.engine!.query("mirror.flush", 2000);
  });
  after(async () => {
    scratch.cleanup();
  });

  it("each message comes back as Claude Code records it: command pieces, then the prompt, then its context as attachments", async () => {
    const out = await restore(tap.root, captured, "--cwd", cwd);
    assert.equal(out.code, 0, out.stderr);
    const written = readLines(`${project}/${captured}.jsonl`);
    const kinds = written.filter((r) => r.type === "attachment").map((r) => r.attachment.type);
    assert.deepEqual([...new Set(kinds)].sort(), [
      "agent_listing_delta",
      "auto_mode",
      "date",
      "deferred_tools_delta",
      "environment",
      "model",
      "remote_session_change",
      "skill_listing",
    ], "every kind is recognised");
    assert.ok(!written.some((r) => r.type === "system" && r.subtype === "api_message"), "the system messages became attachments");
    const pieces = written.filter((r) =>
      r.type === "user" && Array.isArray(r.message.content) && /^<(local-command|command-)/.test(r.message.content[0]?.text ?? "")
    );
    assert.deepEqual(pieces.map((r) => [r.isMeta === true, r.message.content[0].text.slice(0, 22)]), [
      [true, "<local-command-caveat>"],
      [false, "<command-name>/compact"],
      [false, "<local-command-stdout>"],
    ]);
    assert.deepEqual(
      written.filter((r) => r.type === "user" && r.isCompactSummary !== true && typeof r.message.content === "string").map((r) => r.message.content),
      ["hello interactive world", "RUNTOOL now please", "a different path after rewind"],
      "typed prompts are plain strings, as Claude Code keeps them (the rewound one is off the branch)",
    );
    // Every parent is in the file and comes before its child; the compaction's kept segment still resolves.
    const seen = new Set<string>();
    for (const r of written) {
      if (typeof r.parentUuid === "string") assert.ok(seen.has(r.parentUuid), `parent of ${r.uuid} written before it`);
      if (typeof r.uuid === "string") seen.add(r.uuid);
    }
    const segment = written.find((r) => r.subtype === "compact_boundary")?.compactMetadata?.preservedSegment;
    if (segment !== undefined) { for (const k of ["headUuid", "anchorUuid", "tailUuid"]) assert.ok(seen.has(segment[k]), k); }
  });

  describe("a session with a subagent and a title", () => {
    const S = "5e55104e-0000-4000-8000-000000000001";
    const AGENT = "a6e7f26ea7ce61ed8";
    const root = `${scratch.dir}/mirror-sub`;
    const main = `${project}/${S}.jsonl`;
    const agentFile = `${project}/${S}/subagents/agent-${AGENT}.jsonl`;
    const env = { sessionId: S, cwd };
    const agentEnv = { ...env, isSidechain: true, agentId: AGENT };

    before(() => {
      mkdirSync(root, { mode: 0o700 });
      writeMirror(root, S, [
        rec("user", "m1", null, [{ type: "text", text: "<system-reminder>\nctx\n</system-reminder>\n" }, { type: "text", text: "please RUNAGENT now" }], env),
        rec("assistant", "m2", "m1", [{ type: "tool_use", id: "toolu_1", name: "Agent", input: { prompt: "SUBTASK: say hello" } }], env),
        rec("user", "m3", "m2", [{ type: "tool_result", tool_use_id: "toolu_1", content: "launched" }], env),
        rec("assistant", "m4", "m3", [{ type: "text", text: "Done." }], env),
      ]);
      mkdirSync(`${root}/${S}/subagents/agent-${AGENT}`, { recursive: true, mode: 0o700 });
      writeMirror(`${root}/${S}/subagents`, `agent-${AGENT}`, [
        rec(
          "user",
          "s1",
          null,
          [{ type: "text", text: "<system-reminder>\nctx\n</system-reminder>\n" }, { type: "text", text: "SUBTASK: say hello" }],
          agentEnv,
        ),
        rec("assistant", "s2", "s1", [{ type: "text", text: "Hello." }], agentEnv),
      ]);
      mkdirSync(`${root}/${S}/side`, { recursive: true, mode: 0o700 });
      writeMirror(`${root}/${S}`, "side", [
        rec("user", "t1", null, [{ type: "text", text: "<session>\nplease RUNAGENT now\n</session>\n\nWrite the title…" }], { ...env, isSidechain: true }),
        rec("assistant", "t2", "t1", [{ type: "text", text: '{"title":"Stub subagent run"}' }], { ...env, isSidechain: true }),
      ]);
    });

    it("writes the subagent where Claude Code keeps it, the title record first, and says so", async () => {
      const out = await restore(root, S);
      assert.equal(out.code, 0, out.stderr);
      const lines = readLines(main);
      assert.deepEqual(lines[0], { type: "ai-title", aiTitle: "Stub subagent run", sessionId: S });
      assert.deepEqual(
        lines.at(-1),
        { type: "last-prompt", lastPrompt: "please RUNAGENT now", leafUuid: "m4", sessionId: S },
        "what Claude Code's session list shows",
      );
      assert.match(out.stdout, /titled "Stub subagent run"/);
      assert.ok(out.stdout.includes(`subagent ${agentFile} (3 records)`), out.stdout);
      const agent = readLines(agentFile);
      assert.deepEqual(agent.map((r) => r.type), ["user", "attachment", "assistant"]);
      assert.ok(agent.every((r) => r.isSidechain === true && r.agentId === AGENT && r.sessionId === S && r.cwd === cwd));
      assert.equal(agent[0].message.content, "SUBTASK: say hello");
      assert.equal(statSync(agentFile).mode & 0o777, 0o600);
      assert.equal(statSync(`${project}/${S}/subagents`).mode & 0o777, 0o700);
      assert.equal(generatedTitle([]), null);
    });

    it("an existing subagent file with conversation is kept (--force replaces it, with a backup); a stub is replaced", async () => {
      writeFileSync(agentFile, readFileSync(agentFile, "utf8").replace("Hello.", "Hello from Claude Code."));
      const kept = await restore(root, S, "--force", "--json");
      assert.equal(kept.code, 0, kept.stderr);
      const outcome = JSON.parse(kept.stdout);
      assert.equal(outcome.subagents[0].action, "replace");
      assert.ok(existsSync(outcome.subagents[0].backup));
      assert.ok(readFileSync(outcome.subagents[0].backup, "utf8").includes("Hello from Claude Code."));
      writeFileSync(agentFile, readFileSync(agentFile, "utf8").replace("Hello.", "Hello again."));
      writeFileSync(main, '{"type":"mode","mode":"normal"}\n'); // the main transcript is a stub again
      const again = JSON.parse((await restore(root, S, "--json")).stdout);
      assert.equal(again.subagents[0].action, "keep");
      assert.ok(readFileSync(agentFile, "utf8").includes("Hello again."), "kept as it was");
      writeFileSync(agentFile, '{"type":"mode","mode":"normal"}\n');
      writeFileSync(main, '{"type":"mode","mode":"normal"}\n');
      const stubbed = JSON.parse((await restore(root, S, "--json")).stdout);
      assert.equal(stubbed.subagents[0].action, "replace");
    });

    it("what the replaced file holds besides its conversation is kept: a title the user gave, a tag, an unknown kind", async () => {
      const own = [
        { type: "custom-title", customTitle: "my own name for it", sessionId: S },
        { type: "tag", tag: "keep", sessionId: S },
        { type: "a-kind-of-record-from-the-future", value: 1, sessionId: S },
        { type: "last-prompt", lastPrompt: "please RUNAGENT now", leafUuid: "gone-with-the-old-chain", sessionId: S },
      ];
      writeFileSync(main, own.map((r) => JSON.stringify(r) + "\n").join(""));
      const out = await restore(root, S);
      assert.equal(out.code, 0, out.stderr);
      const lines = readLines(main);
      assert.deepEqual(lines.slice(0, 3), own.slice(0, 3), "kept, first, as they were");
      assert.deepEqual(
        lines.filter((r) => r.type === "last-prompt").map((r) => r.leafUuid),
        ["m4"],
        "the old chain's bookkeeping is not; the restored one's is",
      );
      assert.ok(lines.some((r) => r.type === "assistant"));
    });

    it("the restored file is new: its modification time is now, whatever the old file's was", async () => {
      const old = Date.now() / 1000 - 40 * 86_400;
      utimesSync(main, old, old);
      const started = Date.now();
      const out = await restore(root, S, "--force");
      assert.equal(out.code, 0, out.stderr);
      assert.ok(statSync(main).mtimeMs >= started - 1000, "a fresh mtime: Claude Code's cleanup by age does not take it");
      assert.ok(statSync(agentFile).mtimeMs >= started - 1000);
    });

    it("a transcript with a torn last line: the refusal names it, and --force fixes it", async () => {
      writeFileSync(main, readFileSync(main, "utf8") + '{"parentUuid":"m4","type":"user","message":{"role":"us');
      const refused = await restore(root, S);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /its last line is torn, a half-written record/);
      assert.match(refused.stderr, new RegExp(`sessiontap restore ${S} --force`));
      const forced = await restore(root, S, "--force");
      assert.equal(forced.code, 0, forced.stderr);
      assert.ok(readFileSync(main, "utf8").endsWith("\n"));
    });
  });
});
