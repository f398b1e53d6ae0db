// Restore writes what Claude Code 2.1.328 writes: injected context split off each prompt into records of
// its own (reminders and caveats hidden with isMeta), so they join back into the very message that was
// sent; subagents at <project>/<session>/subagents/agent-<id>.jsonl; the session's ai-title record when
// the mirror saw Claude Code's title request; a fresh modification time; and a torn last line named.
// The real interactive capture (a tool call, /compact, a rewind) is replayed through a tap for the first.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { encodeProjectDir } from "../../src/transcript/project-dir.ts";
import { splitInjectedContext } from "../../src/transcript/injected-context.ts";
import { sessionTitle } from "../../src/transcript/session-title.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { readTree, startTestTap, type TestTap } from "../support/tap.ts";
import { cli, rec, replayCapture, scratchDir, writeMirror } from "../support/recover.ts";

import type { Rec } from "../support/claude.ts";
const NOW = Date.parse("2026-11-30T12:00:00.000Z");
const blocks = (c: unknown): Rec[] => (typeof c === "string" ? [{ type: "text", text: c }] : (c as Rec[]));
const readLines = (path: string): Rec[] => readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));

/** How Claude Code joins consecutive user records into one message when it resumes: a "\n" after each record's text but the last. */
function joinLikeClaudeCode(pieces: Rec[]): Rec[] {
  return pieces.flatMap((r, i) => blocks(r.message.content).map((b) => (i < pieces.length - 1 && b.type === "text" ? { ...b, text: `${b.text}\n` } : b)));
}

describe("restore in Claude Code's own shape", { timeout: 60_000 }, () => {
  const scratch = scratchDir();
  const claude = `${scratch.dir}/claude`;
  const cwd = `${scratch.dir}/proj`;
  const project = `${claude}/projects/${encodeProjectDir(cwd)}`;
  let stub: StubUpstream;
  let tap: TestTap;
  let captured = "";
  const restore = (root: string, ...args: string[]) => cli(["restore", ...args, "--mirror-dir", root, "--claude-dir", claude], {}, { cwd, clock: () => NOW });

  before(async () => {
    stub = await startStub();
    tap = await startTestTap(stub.url);
    captured = await replayCapture(tap, stub);
    await tap.mirror!.flush(2000);
  });
  after(async () => {
    await tap?.close();
    await stub?.close();
    scratch.cleanup();
  });

  it("each prompt's injected context becomes records of its own that join back into the message as it was sent", async () => {
    const out = await restore(tap.root, captured, "--cwd", cwd);
    assert.equal(out.code, 0, out.stderr);
    const written = readLines(`${project}/${captured}.jsonl`);
    const mirrored = new Map([...readTree(tap.root).entries()].filter(([p]) => p.split("/").length === 2).flatMap(([, r]) => r).map((r) => [r.uuid, r as Rec]));
    // Runs of user records end at the record that keeps the mirror's uuid: joined, they are its content.
    let run: Rec[] = [];
    let joined = 0;
    for (const r of written) {
      if (r.type !== "user") {
        run = [];
        continue;
      }
      run.push(r);
      const original = mirrored.get(r.uuid);
      if (original === undefined) continue;
      assert.deepEqual(joinLikeClaudeCode(run), blocks(original.message.content), `the message of ${r.uuid}`);
      if (run.length > 1) joined++;
      run = [];
    }
    assert.equal(joined, 2, "the first prompt (after its reminder) and the one after /compact (reminder, caveat, command, output)");
    const pieces = written.filter((r) => r.type === "user" && !mirrored.has(r.uuid));
    assert.deepEqual(pieces.map((r) => [r.isMeta === true, blocks(r.message.content)[0].text.slice(0, 22)]), [
      [true, "<system-reminder>\nAttr"],
      [true, "<system-reminder>\nAttr"],
      [true, "<local-command-caveat>"],
      [false, "<command-name>/compact"],
      [false, "<local-command-stdout>"],
    ]);
    // Every parent is in the file and comes before its child; the compaction's kept segment still resolves.
    const seen = new Set<string>();
    for (const r of written) {
      if (typeof r.parentUuid === "string") assert.ok(seen.has(r.parentUuid), `parent of ${r.uuid} written before it`);
      if (typeof r.uuid === "string") seen.add(r.uuid);
    }
    const segment = written.find((r) => r.subtype === "compact_boundary")?.compactMetadata?.preservedSegment;
    if (segment !== undefined) { for (const k of ["headUuid", "anchorUuid", "tailUuid"]) assert.ok(seen.has(segment[k]), k); }
  });

  it("a message that would not come back byte for byte is left whole", () => {
    const whole = [rec("user", "u1", null, [{ type: "text", text: "<system-reminder>no newline</system-reminder>" }, { type: "text", text: "typed" }])];
    assert.deepEqual(splitInjectedContext(whole), whole);
    const interleaved = [
      rec("user", "u2", null, [{ type: "text", text: "<system-reminder>a</system-reminder>\n" }, { type: "text", text: "typed" }, {
        type: "text",
        text: "<system-reminder>b</system-reminder>\n",
      }]),
    ];
    assert.equal(splitInjectedContext(interleaved).length, 2, "only the leading run is split off; the rest stays together, in order");
    const only = [rec("user", "u3", null, [{ type: "text", text: "<system-reminder>a</system-reminder>\n" }])];
    assert.deepEqual(splitInjectedContext(only), only, "nothing typed after it: left as it is");
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
      assert.match(out.stdout, /titled "Stub subagent run"/);
      assert.ok(out.stdout.includes(`subagent ${agentFile} (3 records)`), out.stdout);
      const agent = readLines(agentFile);
      assert.deepEqual(agent.map((r) => [r.type, r.isMeta === true]), [["user", true], ["user", false], ["assistant", false]]);
      assert.ok(agent.every((r) => r.isSidechain === true && r.agentId === AGENT && r.sessionId === S && r.cwd === cwd));
      assert.equal(agent[1].message.content[0].text, "SUBTASK: say hello");
      assert.equal(statSync(agentFile).mode & 0o777, 0o600);
      assert.equal(statSync(`${project}/${S}/subagents`).mode & 0o777, 0o700);
      assert.equal(sessionTitle([]), null);
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
