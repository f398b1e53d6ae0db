// Where the environment travels (docs/DESIGN.md "Where the environment travels"): the working directory,
// git branch and entrypoint read from every request of the real Claude Code captures — 2.1.328 (a
// `role:"system"` environment message, with and without a compaction) and 2.1.332 with its default model
// (the same) and with claude-sonnet-4-5 (a `<system-reminder>` in the first user message) — equal what
// Claude Code wrote into its own transcript; look-alike lines elsewhere are not read; the user agent
// gives the version Claude Code writes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { COMPACTION_PREFIX, readEnvironment, readUserAgent } from "../../src/protocol/classify.ts";
import { capturedRequests, capturedTranscript } from "../support/captures.ts";
import type { Rec } from "../support/claude.ts";

const CAPTURES = [
  "cc-2.1.328-tool-session",
  "cc-2.1.328-interactive-compact-rewind",
  "cc-2.1.332-tool-session/default-model",
  "cc-2.1.332-tool-session/sonnet-4-5",
];
const reminder = (text: string) => ({ type: "text", text: `<system-reminder>\n${text}\n</system-reminder>` });

describe("readEnvironment and readUserAgent over the real captures", () => {
  for (const capture of CAPTURES) {
    it(`${capture}: every request names the cwd, branch, entrypoint and version Claude Code wrote`, () => {
      const own = capturedTranscript(capture).filter((r: Rec) => r.type === "user" || r.type === "assistant");
      const requests = capturedRequests(capture);
      // Outside a git repository Claude Code still writes `gitBranch: "HEAD"`, which nothing on the wire says.
      const inGit = !JSON.stringify(requests[0].body).includes("Is a git repository: false");
      const expected = { cwd: own[0].cwd, gitBranch: inGit ? own[0].gitBranch : null, entrypoint: own[0].entrypoint };
      assert.ok(own.every((r: Rec) => r.cwd === expected.cwd && r.version === own[0].version), "one cwd and version in Claude Code's own records");
      if (inGit) assert.equal(expected.gitBranch, "main");
      assert.ok(requests.length >= 3);
      for (const request of requests) {
        assert.deepEqual(readEnvironment(request.body.system, request.body.messages), expected, `request ${request.n}`);
        const agent = readUserAgent(request.headers["user-agent"]);
        assert.deepEqual(agent, { version: own[0].version, entrypoint: own[0].entrypoint }, request.headers["user-agent"]);
      }
    });
  }

  it("2.1.332 with claude-sonnet-4-5 sends the environment only in the first user message's reminders", () => {
    const [first] = capturedRequests("cc-2.1.332-tool-session/sonnet-4-5");
    assert.equal(first.body.messages.filter((m) => m.role === "system").length, 0);
    assert.equal(JSON.stringify(first.body.system).includes("Primary working directory"), false);
    assert.deepEqual(readEnvironment(first.body.system, []), { cwd: null, gitBranch: null, entrypoint: "sdk-cli" }, "not from the system prompt");
  });

  it("a compacted request: the environment is read from the user message after the summary", () => {
    // 2.1.332 with claude-sonnet-4-5 after /compact (seen with the real CLI): the summary, its answer, then
    // the next prompt carrying the reminders the first message carried before.
    const [first] = capturedRequests("cc-2.1.332-tool-session/sonnet-4-5");
    const opening = first.body.messages[0].content as Rec[];
    const messages = [
      { role: "user", content: `${COMPACTION_PREFIX} that ran out of context. The summary below covers the earlier portion.` },
      { role: "assistant", content: [{ type: "text", text: "Done (reply 2)." }] },
      { role: "user", content: [...opening.slice(0, -1), { type: "text", text: "after compaction" }] },
    ];
    assert.deepEqual(readEnvironment(first.body.system, messages), { cwd: "/tmp/ccref/proj", gitBranch: "main", entrypoint: "sdk-cli" });
  });

  it("look-alike lines are not read: a typed prompt, the user's CLAUDE.md, a later message", () => {
    const env = reminder("# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /real/proj");
    const git = reminder(
      "As you answer the user's questions, you can use the following context:\n# gitStatus\nThis is the git status.\n\nCurrent branch: real-branch",
    );
    const claudeMd = reminder("# claudeMd\nCodebase instructions:\nWorking directory: /from/claude-md\nCurrent branch: from-claude-md");
    const typed = { type: "text", text: "Primary working directory: /typed\nCurrent branch: typed" };
    assert.deepEqual(readEnvironment(undefined, [{ role: "user", content: [claudeMd, git, env, typed] }]), {
      cwd: "/real/proj",
      gitBranch: "real-branch",
      entrypoint: null,
    });
    assert.deepEqual(readEnvironment(undefined, [{ role: "user", content: [claudeMd, typed] }]), { cwd: null, gitBranch: null, entrypoint: null });
    const later = [{ role: "user", content: "hello" }, { role: "assistant", content: "hi" }, { role: "user", content: [env, git, typed] }];
    assert.deepEqual(readEnvironment(undefined, later), { cwd: null, gitBranch: null, entrypoint: null }, "only the opening message carries it");
  });

  it("the system prompt and system messages are read as a whole, as older clients send them", () => {
    const system = [{ type: "text", text: "x-anthropic-billing-header: cc_version=1.0.98; cc_entrypoint=cli;" }, {
      type: "text",
      text: "<env>\nWorking directory: /old/proj\n</env>\ngitStatus: This is the git status\nCurrent branch: old-main",
    }];
    assert.deepEqual(readEnvironment(system, [{ role: "user", content: "hi" }]), { cwd: "/old/proj", gitBranch: "old-main", entrypoint: "cli" });
    assert.deepEqual(readEnvironment("Working directory: /s", [{ role: "system", content: [{ type: "text", text: "Current branch: b" }] }]), {
      cwd: "/s",
      gitBranch: "b",
      entrypoint: null,
    });
  });

  it("readUserAgent: Claude Code's version and entrypoint, and nothing from other clients", () => {
    assert.deepEqual(readUserAgent("claude-cli/2.1.332 (external, sdk-cli)"), { version: "2.1.332", entrypoint: "sdk-cli" });
    assert.deepEqual(readUserAgent("claude-cli/2.1.328 (external, cli)"), { version: "2.1.328", entrypoint: "cli" });
    assert.deepEqual(readUserAgent("claude-cli/2.2.0-beta.1"), { version: "2.2.0-beta.1", entrypoint: null });
    assert.deepEqual(readUserAgent("claude-cli/2.1.332 (external, sd k)"), { version: "2.1.332", entrypoint: null });
    for (const other of [null, "", "Anthropic/JS 0.128.0", "curl/8.5.0", "claude-cli/latest", "xclaude-cli/2.1.332"]) {
      assert.deepEqual(readUserAgent(other), { version: null, entrypoint: null }, String(other));
    }
  });
});
