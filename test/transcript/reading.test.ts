// The pure parts of reading a conversation: titles from Claude Code's title answers, control characters
// scrubbed, tool calls in one line, Claude Code's injected context in one line, search matchers and their
// snippets, and the terminal text of `show` (tool results beneath their calls, no tags, colour only when
// asked). Runs under Bun and Deno.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { environmentSummary, hasControl, injectedSummary, scrubControl, scrubLine, terminalSafeJson, toolLine } from "../../src/transcript/records.ts";
import { bytesShort } from "../../src/usage/tokens.ts";
import { UTC } from "../../src/utils/local-time.ts";
import { ANSI_STYLE, PLAIN, renderText } from "../../src/transcript/render.ts";
import { regexMatcher, search, snippet, substringMatcher, termsMatcher } from "../../src/transcript/search.ts";
import { generatedTitle, sessionTitle, titleFromAnswer } from "../../src/transcript/summary.ts";
import { buildTree, outline } from "../../src/transcript/tree.ts";
import { BUILTIN_PRICES } from "../../src/usage/prices.ts";
import { rec } from "../support/recover.ts";

const ESC = String.fromCharCode(27);
const answer = (text: string, uuid = "t2", parent: string | null = null) => rec("assistant", uuid, parent, [{ type: "text", text }]);

describe("titles", () => {
  it("Claude Code's title answer is JSON with a title (2.x), or with isNewTopic (1.x), bare or fenced", () => {
    assert.equal(titleFromAnswer(answer(`{"title": "Login test flakiness"}`)), "Login test flakiness");
    assert.equal(titleFromAnswer(answer('```json\n{"title":"Auth refactor"}\n```')), "Auth refactor");
    assert.equal(titleFromAnswer(answer(`{"isNewTopic": true, "title": "Build fix"}`)), "Build fix");
    for (const text of ["Done (reply 2).", `{"title": ""}`, `{"title": 3}`, `{"name": "x"}`, "{not json"]) {
      assert.equal(titleFromAnswer(answer(text)), null, text);
    }
    assert.equal(titleFromAnswer(rec("user", "u", null, `{"title": "a prompt, not an answer"}`)), null);
  });

  it("the newest answer to Claude Code's title request wins; a title is shown in one line without control characters", () => {
    const side = [
      rec("user", "t1", null, "<session>\nx\n</session>"),
      answer(`{"title": "First"}`, "t2", "t1"),
      rec("user", "t3", null, "<session>\nx y\n</session>"),
      answer(`{"title": "Second\\n\\u001b[31mline"}`, "t4", "t3"),
      answer("summary text", "t5", "t3"),
      rec("user", "t6", null, "Summarise the conversation as JSON."),
      answer(`{"title": "another side request's answer"}`, "t7", "t6"),
    ];
    assert.equal(sessionTitle(side, []), "Second line");
    assert.equal(generatedTitle(side), "Second\n\u001b[31mline", "as Claude Code got it (restore writes it so)");
    assert.equal(generatedTitle(side.slice(5)), null, "a JSON title that answers another request is not the session's title");
  });

  it("without one, the first prompt a person typed, cut to one line", () => {
    const records = [
      rec("user", "u1", null, [{ type: "text", text: "<system-reminder>r</system-reminder>" }, { type: "text", text: "fix\nthe " + "build ".repeat(40) }]),
    ];
    const title = sessionTitle([], records)!;
    assert.ok(title.startsWith("fix the build build"));
    assert.ok(title.length <= 100 && title.endsWith("…"));
    assert.equal(sessionTitle([], []), null);
  });
});

describe("control characters", () => {
  it("escape sequences go whole, other controls go, tabs and newlines stay, CRLF becomes LF", () => {
    assert.equal(scrubControl(`${ESC}[2mCompacted (ctrl+o to see full summary)${ESC}[22m`), "Compacted (ctrl+o to see full summary)");
    assert.equal(scrubControl(`a${ESC}]0;title\u0007b\tc\r\nd\re\u0000f\u009bg\u007f`), "ab\tc\nd\nefg");
    assert.equal(scrubControl("plain ünïcødé ✓"), "plain ünïcødé ✓");
    assert.equal(scrubLine(`/home/me/a${ESC}[2J \r\n\tFAIL  forged\nline`), "/home/me/a FAIL  forged line", "one line for a table cell");
    assert.ok(hasControl(`x${ESC}`) && !hasControl("x\ty\n"));
    // Bidirectional controls reorder what a line shows (Trojan Source): they go, the text they held stays.
    assert.equal(scrubLine("ls \u202e/etc/passwd\u2066 x\u2069 \u202a\u202c"), "ls /etc/passwd x ");
    assert.ok(hasControl("a\u2067b") && !hasControl("עברית and العربية"), "right-to-left text itself is not a control");
    assert.equal(terminalSafeJson(JSON.stringify({ id: "a\u202eb\u009b" })), '{"id":"a\\u202eb\\u009b"}', "JSON keeps the value, escaped");
  });
});

describe("one-line summaries", () => {
  it("tool calls: the field that says what the call did", () => {
    assert.equal(toolLine("Bash", { command: "ls -la", description: "List" }), "Bash: ls -la");
    assert.equal(toolLine("Read", { file_path: "/src/main.ts" }), "Read: /src/main.ts");
    assert.equal(toolLine("Write", { file_path: "a.txt", content: "1\n2\n3" }), "Write: a.txt (3 lines)");
    assert.equal(toolLine("Grep", { pattern: "TODO", path: "src" }), "Grep: TODO in src");
    assert.equal(toolLine("Task", { description: "Find the bug", subagent_type: "Explore" }), "Task: Find the bug (Explore)");
    assert.equal(toolLine("TodoWrite", { todos: [{}, {}] }), "TodoWrite: 2 todos");
    assert.equal(toolLine("mcp__x__lookup", { id: 7, q: "zebra" }), "mcp__x__lookup: zebra");
    assert.equal(toolLine("Bash", { command: `echo 1\necho 2 ${ESC}[1m` }), "Bash: echo 1 echo 2");
    assert.ok(toolLine("Bash", { command: "x".repeat(500) }).length <= 160);
  });

  it("Claude Code's injected context: a command, its output, a reminder, the environment", () => {
    assert.equal(
      injectedSummary("<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args></command-args>"),
      "command /compact",
    );
    assert.equal(
      injectedSummary(`<local-command-stdout>${ESC}[2mCompacted (ctrl+o to see full summary)${ESC}[22m</local-command-stdout>`),
      "command output: Compacted (ctrl+o to see full summary)",
    );
    assert.match(
      injectedSummary("<system-reminder>\nAttribution for git commits\nmore</system-reminder>"),
      /^reminder \(\d+ B\): Attribution for git commits more$/,
    );
    const env = "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /tmp/p\n" + "x".repeat(10_000) +
      "\nThe exact model ID is claude-opus-5-5. More.";
    assert.equal(
      environmentSummary(env),
      `environment from Claude Code (${(new TextEncoder().encode(env).length / 1024).toFixed(1)} KB; cwd /tmp/p, model claude-opus-5-5)`,
    );
  });

  it("sizes, as every reader shows them: bytes below 1 KB, else one decimal in the largest unit", () => {
    assert.deepEqual([512, 1024, 15_565, 3_565_158, 5 * 1024 ** 4].map(bytesShort), ["512 B", "1.0 KB", "15.2 KB", "3.4 MB", "5.0 TB"]);
  });
});

describe("search", () => {
  const records = [
    rec("user", "u1", null, "Fix the Login test", { sessionId: "s" }),
    rec("assistant", "a1", "u1", [{ type: "tool_use", id: "t1", name: "Bash", input: { command: "npm test -- login" } }], { sessionId: "s" }),
    rec("user", "u2", "a1", [{ type: "tool_result", tool_use_id: "t1", content: "FAIL login.test.ts" }], { sessionId: "s" }),
    rec("user", "u3", "u2", [{ type: "text", text: "<system-reminder>login everywhere</system-reminder>" }, { type: "text", text: "thanks" }], {
      sessionId: "s",
    }),
  ];
  const side = [rec("user", "t1", null, "<session>\nx\n</session>"), answer(`{"title": "Login test"}`, "t2", "t1")];
  const sessions = [{ dir: "s", records, side }];

  it("a case-insensitive substring: every message, its role, the match marked in the snippet; injected context is not searched", () => {
    const hits = search(sessions, substringMatcher("LOGIN"));
    assert.deepEqual(hits.map((h) => [h.uuid, h.role, h.title]), [["u1", "user", "Login test"], ["a1", "assistant", "Login test"], [
      "u2",
      "tool result",
      "Login test",
    ]]);
    for (const h of hits) assert.ok(h.marks.length > 0 && h.marks.every(([a, b]) => h.snippet.slice(a, b).toLowerCase() === "login"), JSON.stringify(h));
  });

  it("a regular expression; the viewer's terms (all of them, any order); a limit", () => {
    assert.deepEqual(search(sessions, regexMatcher("fail\\s+\\w+\\.test")).map((h) => h.uuid), ["u2"]);
    assert.deepEqual(search(sessions, regexMatcher("(?:)")).length, 0, "an empty match is no match");
    assert.deepEqual(search(sessions, termsMatcher('test "fix the"')!).map((h) => h.uuid), ["u1"]);
    assert.equal(termsMatcher("   "), null);
    assert.equal(search(sessions, substringMatcher("login"), 2).length, 2);
  });

  it("a snippet is one line around the first match, whitespace flattened, marks moved with it", () => {
    const text = "a".repeat(100) + "\n\n  needle here\t\tand   more " + "b".repeat(300);
    const s = snippet(text, substringMatcher("needle")(text).concat(substringMatcher("more")(text)));
    assert.ok(s.snippet.startsWith("…") && s.snippet.endsWith("…") && !/\s\s|\n/.test(s.snippet), s.snippet);
    assert.deepEqual(s.marks.map(([a, b]) => s.snippet.slice(a, b)), ["needle", "more"]);
  });
});

describe("show's terminal text", () => {
  const long = Array.from({ length: 10 }, (_, i) => `out ${i}`).join("\n");
  const records = [
    rec("user", "u1", null, [{ type: "text", text: "<system-reminder>be nice</system-reminder>" }, { type: "text", text: "run it <b>now</b>" }]),
    rec("system", "s1", "u1", [{ type: "text", text: "# Environment\n - Primary working directory: /w" }]),
    rec("assistant", "a1", "s1", [{ type: "thinking", thinking: "let me think" }, { type: "tool_use", id: "t1", name: "Bash", input: { command: "seq 10" } }], {
      message: {
        id: "m1",
        model: "claude-haiku-4-5",
        usage: { input_tokens: 1000, output_tokens: 100 },
        content: [{ type: "thinking", thinking: "let me think" }, { type: "tool_use", id: "t1", name: "Bash", input: { command: "seq 10" } }],
      },
    }),
    rec("user", "u2", "a1", [{ type: "tool_result", tool_use_id: "t1", content: long }]),
    rec("system", "s2", "u2", [{ type: "text", text: "# Environment\n - Primary working directory: /w" }]),
    rec("assistant", "a2", "s2", [{ type: "text", text: `done ${ESC}[1mbold${ESC}[0m` }]),
  ];
  const items = outline(buildTree(records));
  const text = renderText(items, { full: false, style: PLAIN, zone: UTC, prices: BUILTIN_PRICES });

  it("one block per message; the tool call one line with its result folded beneath; context and thinking one line each", () => {
    assert.match(
      text,
      /^User · 2026-\d\d-\d\d \d\d:\d\d:\d\d\n {2}⚙ reminder \(\d+ B\): be nice\n {2}run it <b>now<\/b>\n {2}⚙ environment from Claude Code \(\d+ B; cwd \/w\)\n\nAssistant · claude-haiku-4-5 · /,
    );
    assert.match(
      text,
      /· 1\.00k in · 100 out · ≈ \$0\.0015\n {2}∴ thinking \(12 characters\): let me think\n {2}● Bash: seq 10\n {4}⎿ out 0\n {6}out 1\n {6}out 2\n {6}out 3\n {6}… 6 more lines \(--full shows them\)\n/,
    );
    assert.ok(!text.includes("Tool result") && !text.includes("result of t1"), "the result is not shown twice");
    assert.match(text, /⚙ environment from Claude Code, unchanged/);
    assert.ok(!hasControl(text));
    assert.ok(text.includes("done bold"));
  });

  it("--full shows everything; colour only with the ANSI style", () => {
    const full = renderText(items, { full: true, style: PLAIN, zone: UTC, prices: BUILTIN_PRICES });
    assert.ok(full.includes("out 9") && full.includes('"command": "seq 10"') && full.includes("    let me think") && full.includes("# Environment"));
    assert.ok(!full.includes("<system-reminder>"), "the wrapper's tag is a label, not printed");
    const coloured = renderText(items, { full: false, style: ANSI_STYLE, zone: UTC, prices: BUILTIN_PRICES });
    assert.ok(coloured.includes(`${ESC}[1;36mUser${ESC}[0m`));
    assert.equal(scrubControl(coloured), text, "the same text, coloured");
  });
});
