// Every command's own help and its flags: `CMD --help` prints that command's usage with every flag it
// takes and what each does (exit 0); a flag the command does not take is a usage error naming it (exit 2);
// errors a user can cause are one line naming the setting or path, never a stack trace.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { COMMAND_SPECS, COMMANDS } from "../../src/config/commands.ts";
import { parseConfig, UsageError } from "../../src/config/parse.ts";
import { runTap } from "../support/child.ts";
import { cli } from "../support/recover.ts";

/** A value each flag's parser takes, by the value's name in the table (`--store` wants its own scheme). */
const sample = (flag: string, value: string) =>
  flag === "--store" ? "postgres://h/db" : ({
    N: "5",
    ADDR: "127.0.0.1",
    TOKEN: "Kq8vR2xLm7Tz4NwP",
    URL: "http://127.0.0.1:1",
    DATE: "today",
    "md|html|jsonl": "md",
    "shared|all|off": "shared",
  } as Record<string, string>)[
    value
  ] ?? "x";
/** Every flag some command of the table takes, with its value's name. */
const ALL_FLAGS = new Map(Object.values(COMMAND_SPECS).flatMap((spec) => spec.flags.map((x) => [x.flag, x.value] as const)));

/**
 * The table's commands (but claude, whose arguments are Claude Code's): the arguments that make a whole command
 * line, the flags its help must document, and a flag of another command it must refuse.
 */
const CASES = COMMANDS.filter((c) => c !== "claude").map((command) => {
  const spec = COMMAND_SPECS[command];
  const own = new Set(spec.flags.map((x) => x.flag));
  const refused = [...ALL_FLAGS.keys()].find((flag) => !own.has(flag))!;
  return {
    command,
    args: (spec.args ?? []).map((a) => (a === "migrate" ? a : "x")),
    flags: spec.flags.map((x) => (x.value === null ? x.flag : `${x.flag} ${x.value}`)),
    refused,
    refusedValue: ALL_FLAGS.get(refused) === null ? [] : [sample(refused, ALL_FLAGS.get(refused)!)],
  };
});

describe("the command table is what the parser takes", () => {
  it("every flag of a command's entry is taken by that command, with a value where the entry names one", () => {
    for (const command of COMMANDS.filter((c) => c !== "claude")) {
      const spec = COMMAND_SPECS[command];
      for (const x of spec.flags) {
        const args = [command, ...(spec.args ?? []).map((a) => (a === "migrate" ? a : "x")), x.flag, ...(x.value === null ? [] : [sample(x.flag, x.value)])];
        assert.doesNotThrow(() => parseConfig(args, {}, "/home"), `${args.join(" ")}`);
        if (x.value !== null) assert.throws(() => parseConfig(args.slice(0, -1), {}, "/home"), UsageError, `${x.flag} without its value`);
      }
    }
  });

  it("the table holds the flags the docs promise", () => {
    const flags = (c: keyof typeof COMMAND_SPECS) => COMMAND_SPECS[c].flags.map((x) => x.flag);
    for (const f of ["--port", "--host", "--token", "--upstream", "--mirror-dir", "--no-mirror", "--claude-dir", "--store", "--proxy-port"]) {
      assert.ok(flags("serve").includes(f), f);
    }
    assert.deepEqual(flags("claude"), [], "every argument after claude is Claude Code's");
  });
});

describe("per-command help and flags", () => {
  for (const { command, args, flags, refused, refusedValue } of CASES) {
    it(`${command} --help: its usage line and every flag it takes, with what each does; exit 0`, async () => {
      for (const asked of [[command, "--help"], [command, "-h"], ["help", command], [command, ...args, "--help"]]) {
        const r = await cli(asked);
        assert.equal(r.code, 0, `${asked.join(" ")}: ${r.stderr}`);
        assert.equal(r.stderr, "");
        const usage = r.stdout.split("\n")[0];
        assert.match(usage, new RegExp(`^Usage: sessiontap ${command === "serve" ? "\\[serve\\]" : command}( |$)`));
        for (const flag of flags) {
          assert.ok(usage.includes(`[${flag}]`), `${command}'s usage line lacks [${flag}]: ${usage}`);
          const row = r.stdout.split("\n").find((l) => l.trimStart().startsWith(`${flag} `));
          assert.ok(row !== undefined && row.slice(row.indexOf(flag) + flag.length).trim().length > 10, `${command} --help does not say what ${flag} does`);
        }
        assert.match(r.stdout, /^Exit status: 0 /m);
      }
    });

    it(`${command} ${refused}: a flag it does not take is one line naming it, exit 2`, async () => {
      const r = await cli([command, ...args, refused, ...refusedValue]);
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.equal(r.stdout, "");
      assert.equal(r.stderr, `sessiontap: ${command} does not take ${refused} (see sessiontap ${command} --help)\n`);
    });
  }

  it("serve --help: a token is generated only beyond loopback", async () => {
    const r = await cli(["serve", "--help"]);
    const row = r.stdout.split("\n").find((l) => l.trimStart().startsWith("--token TOKEN ")) ?? "";
    assert.match(row, /on loopback none is needed unless one is given; beyond loopback without one, a token is generated and printed at start/);
  });

  it("claude --help and help claude: the launcher's usage (every other argument after claude is Claude Code's)", async () => {
    for (const asked of [["claude", "--help"], ["claude", "-h"], ["help", "claude"]]) {
      const r = await cli(asked);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.stdout.startsWith("Usage: sessiontap claude [ARGS…]\n"), r.stdout);
      assert.match(r.stdout, /SESSIONTAP_CLAUDE/);
      assert.match(r.stdout, /^Exit status: Claude Code's own exit status/m);
    }
  });

  it("mcp --help: the line that adds it to Claude Code for every project, and what it gives without -s user", async () => {
    const r = await cli(["mcp", "--help"]);
    assert.match(r.stdout, /^ {2}claude mcp add -s user sessiontap -- sessiontap mcp$/m);
    assert.match(r.stdout, /without -s user, for the current directory only/);
  });

  it("doctor takes --url or --port, not both; a bad --url is named", async () => {
    assert.match((await cli(["doctor", "--url", "http://127.0.0.1:1", "--port", "5"])).stderr, /--url or --port, not both/);
    const bad = await cli(["doctor", "--url", "ftp://x"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--url must be an http\(s\) URL/);
  });

  it("a bad --since date or --regex is one line naming it, exit 2", async () => {
    for (
      const [args, pattern] of [
        [["usage", "--since", "2026-02-30"], /^sessiontap: --since must be a date YYYY-MM-DD, today, yesterday or Nd \(the last N days\), got "2026-02-30"\n$/],
        [["list", "--since", "last week"], /^sessiontap: --since must be a date/],
        [["usage", "--since", "0d"], /^sessiontap: --since must be a date/],
        [["search", "a(b", "--regex"], /^sessiontap: search --regex: "a\(b" is not a regular expression \(.+\)\n$/],
      ] as [string[], RegExp][]
    ) {
      const r = await cli(args);
      assert.equal(r.code, 2, args.join(" "));
      assert.equal(r.stdout, "");
      assert.match(r.stderr, pattern);
      assert.equal(r.stderr.split("\n").length, 2, "one line");
    }
    assert.match((await cli(["search"])).stderr, /^sessiontap: search needs QUERY/);
  });

  it("an unknown flag close to one sessiontap takes is answered with it: did you mean; a far one is not", async () => {
    for (const [args, near] of [[["--prot", "5"], "--port"], [["list", "--jsno"], "--json"], [["serve", "--mirrordir", "x"], "--mirror-dir"]]) {
      const r = await cli(args as string[]);
      assert.equal(r.code, 2);
      assert.equal(r.stdout, "");
      assert.equal(r.stderr, `sessiontap: unknown option ${args[0] === "--prot" ? "--prot" : args[1]}; did you mean ${near}? (see sessiontap --help)\n`);
    }
    assert.equal((await cli(["--frobnicate"])).stderr, "sessiontap: unknown option --frobnicate (see sessiontap --help)\n");
  });

  it("a missing or an extra argument is a usage error naming what the command takes", async () => {
    assert.match((await cli(["show"])).stderr, /show needs a SESSION/);
    assert.match((await cli(["export", "a", "b"])).stderr, /export takes SESSION, got "b" too/);
    assert.match((await cli(["doctor", "now"])).stderr, /doctor takes no arguments, got "now" too/);
    for (const args of [["show"], ["export", "a", "b"], ["doctor", "now"], ["help", "frobnicate"]]) assert.equal((await cli(args)).code, 2, args.join(" "));
  });

  it("the general help lists every command's usage line", async () => {
    const r = await cli(["--help"]);
    for (const command of COMMANDS) assert.match(r.stdout, new RegExp(`^  sessiontap ${command === "serve" ? "\\[serve\\]" : command} `, "m"));
    assert.match(r.stdout, /sessiontap CMD --help/);
  });
});

describe("errors a user can cause, through the real process", () => {
  let scratch: string;
  before(() => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-help-`);
    writeFileSync(`${scratch}/a-file`, "x");
    mkdirSync(`${scratch}/home`);
    writeFileSync(`${scratch}/home/.claude`, "a file where Claude Code's directory belongs");
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  const cases: [string, string[], Record<string, string>, RegExp][] = [
    [
      "a mirror root under a file (ENOTDIR)",
      ["serve", "--port", "0", "--mirror-dir", "A_FILE/mirror"],
      {},
      /^sessiontap: cannot mirror to \S+\/a-file\/mirror \(set by --mirror-dir\): it cannot be created \(ENOTDIR/,
    ],
    [
      "a HOME where the default root cannot be made",
      ["serve", "--port", "0"],
      { HOME: "HOME" },
      /^sessiontap: cannot mirror to \S+\/home\/\.claude\/session-mirrors \(set by the default ~\/\.claude\/session-mirrors \(set --mirror-dir or SESSIONTAP_MIRROR_DIR\)\)/,
    ],
    [
      "SESSIONTAP_MIRROR_DIR under a file",
      ["serve", "--port", "0"],
      { SESSIONTAP_MIRROR_DIR: "A_FILE/m" },
      /\(set by SESSIONTAP_MIRROR_DIR\): it cannot be created \(ENOTDIR/,
    ],
    [
      "list on a root under a file",
      ["list", "--mirror-dir", "A_FILE/m"],
      {},
      /^sessiontap: (there is no mirror at|cannot read the mirror root) \S+\/a-file\/m \(--mirror-dir\)/,
    ],
    ["export --out into a file's child", ["export", "x", "--mirror-dir", "A_FILE/m", "--out", "A_FILE/out.md"], {}, /^sessiontap: /],
  ];
  for (const [label, rawArgs, rawEnv, pattern] of cases) {
    it(`${label}: one line naming the path and the setting, no stack trace`, { timeout: 30_000 }, async () => {
      const fill = (s: string) => s.replace("A_FILE", `${scratch}/a-file`).replace(/^HOME$/, `${scratch}/home`);
      const r = await runTap(rawArgs.map(fill), { env: { HOME: scratch, ...Object.fromEntries(Object.entries(rawEnv).map(([k, v]) => [k, fill(v)])) } });
      assert.ok(r.code === 1 || r.code === 2, `exit ${r.code}: ${r.stderr}`);
      if (rawArgs[0] === "serve") assert.equal(r.code, 2, "an unusable mirror root stops serve before it listens");
      assert.equal(r.stdout, "", "no startup block");
      assert.equal(r.stderr.trimEnd().split("\n").length, 1, `not one line: ${r.stderr}`);
      assert.match(r.stderr, pattern);
      assert.doesNotMatch(r.stderr, /\bat \S+:\d+|\^|node_modules|\.ts:\d+/, "a stack trace or source line");
    });
  }
});
