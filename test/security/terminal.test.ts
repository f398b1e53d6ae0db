// Nothing a request carried can drive the reader's terminal (docs/RELIABILITY.md "Trust boundaries"):
// escape sequences, C0/C1 controls and the bidirectional controls that reorder what a line shows
// (U+202A–U+202E, U+2066–U+2069: "Trojan Source") in an id, a working directory, a branch, a model, a
// prompt, an answer, a tool's name and input — none reaches the output of list, show, search, usage,
// export (Markdown and HTML) or doctor. The JSONL export keeps the records as they are (JSON escapes them).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { dirName } from "../../src/protocol/session-id.ts";
import { cli, rec, scratchDir, writeMirror } from "../support/recover.ts";

const RLO = "\u202e";
const LRI = "\u2066";
const PDI = "\u2069";
const ESC = "\u001b";
/** Every character that must not reach a terminal. */
// deno-lint-ignore no-control-regex -- matching them is the point
const FORBIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const evil = (s: string) => `${s}${RLO}evil${LRI}x${PDI}${ESC}[2J${ESC}]0;title\u0007\u009b`;

describe("terminal output carries no control characters from the records", () => {
  const scratch = scratchDir("sessiontap-terminal-");
  const root = `${scratch.dir}/mirror`;
  const id = evil("sess-bidi");
  const cwd = evil(`${scratch.dir}/proj`);
  const run = (args: string[]) =>
    cli([...args, "--mirror-dir", root], { CLAUDE_CONFIG_DIR: `${scratch.dir}/claude` }, { clock: () => Date.parse("2026-01-05T00:00:00Z"), cwd: scratch.dir });
  before(() => {
    mkdirSync(root, { mode: 0o700 });
    const env = { sessionId: id, cwd, gitBranch: evil("main") };
    writeMirror(root, dirName(id), [
      rec("user", "u1", null, evil("a prompt about zebras"), env),
      rec("assistant", "a1", "u1", [{ type: "text", text: evil("zebras answer") }, {
        type: "tool_use",
        id: "t1",
        name: evil("Bash"),
        input: { command: evil("ls") },
      }], {
        ...env,
        message: {
          type: "message",
          role: "assistant",
          id: "msg_1",
          model: evil("claude-x"),
          content: [{ type: "text", text: evil("zebras answer") }, { type: "tool_use", id: "t1", name: evil("Bash"), input: { command: evil("ls") } }],
          stop_reason: "tool_use",
          stop_sequence: null,
          stop_details: null,
          usage: { input_tokens: 10, output_tokens: 5 },
        },
      }),
      rec("user", "u2", "a1", [{ type: "tool_result", tool_use_id: "t1", content: evil("a result") }], env),
    ]);
  });
  after(() => scratch.cleanup());

  const dir = () => dirName(id);
  for (
    const [label, args] of [
      ["list", () => ["list"]],
      ["list --json", () => ["list", "--json"]],
      ["show", () => ["show", dir()]],
      ["show --full", () => ["show", dir(), "--full"]],
      ["search", () => ["search", "zebras"]],
      ["usage", () => ["usage"]],
      ["export md", () => ["export", dir(), "--format", "md"]],
      ["export html", () => ["export", dir(), "--format", "html"]],
      ["doctor", () => ["doctor", "--url", "http://127.0.0.1:1"]],
    ] as const
  ) {
    it(`${label} prints none of them`, async () => {
      const r = await run([...args()]);
      const out = r.stdout + r.stderr;
      assert.ok(out.length > 0, label);
      const found = FORBIDDEN.exec(out);
      assert.equal(
        found,
        null,
        `${label}: U+${found?.[0].codePointAt(0)?.toString(16).padStart(4, "0")} at ${found?.index}: ${
          JSON.stringify(out.slice(Math.max(0, (found?.index ?? 0) - 40), (found?.index ?? 0) + 10))
        }`,
      );
    });
  }

  it("the JSONL export keeps each record as it was (escaped by JSON, nothing raw)", async () => {
    const r = await run(["export", dir(), "--format", "jsonl"]);
    assert.equal(r.code, 0, r.stderr);
    const records = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(records[0].message.content, evil("a prompt about zebras"), "content is never altered");
  });
});
