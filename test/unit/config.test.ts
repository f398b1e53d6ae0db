import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseConfig, UsageError } from "../../src/config/parse.ts";

const HOME = "/home/u";

describe("parseConfig()", () => {
  it("uses the SPEC defaults with no flags and no environment", () => {
    const c = parseConfig([], {}, HOME);
    assert.equal(c.command, "serve");
    assert.equal(c.port, 8787);
    assert.equal(c.host, "127.0.0.1");
    assert.equal(c.upstream, "https://api.anthropic.com");
    assert.equal(c.mirrorDir, "/home/u/.claude/session-mirrors");
    assert.equal(c.mirror, true);
    assert.equal(c.maxBytes, 104857600);
    assert.equal(c.retentionDays, 0, "off: the mirror outlives Claude Code's 30-day cleanup");
    assert.equal(c.maxSessions, 1024);
    assert.equal(c.includeThinking, true);
    assert.equal(c.claudeDir, "/home/u/.claude");
    assert.equal(c.store, null);
    assert.equal(c.guard, null, "unset: on when the Claude Code config dir exists (decided at start)");
  });

  it("reads SESSIONTAP_GUARD=on|off", () => {
    assert.equal(parseConfig([], { SESSIONTAP_GUARD: "on" }, HOME).guard, true);
    assert.equal(parseConfig([], { SESSIONTAP_GUARD: "off" }, HOME).guard, false);
  });

  it("lets flags beat the environment and the environment beat defaults", () => {
    const env = { SESSIONTAP_PORT: "9000", SESSIONTAP_HOST: "0.0.0.0", SESSIONTAP_UPSTREAM: "http://env.example" };
    const c = parseConfig(["serve", "--port", "9100", "--upstream=http://flag.example/"], env, HOME);
    assert.equal(c.port, 9100);
    assert.equal(c.host, "0.0.0.0");
    assert.equal(c.upstream, "http://flag.example");
  });

  it("reads every environment setting", () => {
    const c = parseConfig([], {
      SESSIONTAP_MIRROR: "off",
      SESSIONTAP_MAX_BYTES: "2048",
      SESSIONTAP_RETENTION_DAYS: "0",
      SESSIONTAP_MAX_SESSIONS: "3",
      SESSIONTAP_INCLUDE_THINKING: "false",
      SESSIONTAP_MIRROR_DIR: "~/m",
      CLAUDE_CONFIG_DIR: "/c",
      SESSIONTAP_STORE: "postgres://x",
    }, HOME);
    assert.deepEqual(
      [c.mirror, c.maxBytes, c.retentionDays, c.maxSessions, c.includeThinking, c.mirrorDir, c.claudeDir, c.store],
      [false, 2048, 0, 3, false, "/home/u/m", "/c", "postgres://x"],
    );
  });

  it("turns the mirror off with --no-mirror even when the environment says on", () => {
    assert.equal(parseConfig(["--no-mirror"], { SESSIONTAP_MIRROR: "on" }, HOME).mirror, false);
  });

  it("accepts port 0 (pick a free port)", () => {
    assert.equal(parseConfig(["--port", "0"], {}, HOME).port, 0);
  });

  for (
    const [args, env, named] of [
      [["--port", "abc"], {}, "port"],
      [[], { SESSIONTAP_PORT: "70000" }, "port"],
      [["--upstream", "ftp://x"], {}, "upstream"],
      [["--upstream", "not a url"], {}, "upstream"],
      [[], { SESSIONTAP_MIRROR: "maybe" }, "SESSIONTAP_MIRROR"],
      [[], { SESSIONTAP_MAX_BYTES: "-1" }, "SESSIONTAP_MAX_BYTES"],
      [[], { SESSIONTAP_RETENTION_DAYS: "1.5" }, "SESSIONTAP_RETENTION_DAYS"],
      [[], { SESSIONTAP_INCLUDE_THINKING: "yes" }, "SESSIONTAP_INCLUDE_THINKING"],
      [[], { SESSIONTAP_GUARD: "maybe" }, "SESSIONTAP_GUARD"],
      [["--bogus"], {}, "--bogus"],
      [["frobnicate"], {}, "frobnicate"],
      [["--port"], {}, "--port"],
      [["list", "--json=yes"], {}, "--json takes no value"],
      [["-x"], {}, "unknown option -x"],
    ] as [string[], Record<string, string>, string][]
  ) {
    it(`rejects ${JSON.stringify(args)} ${JSON.stringify(env)} with one line naming ${named}`, () => {
      assert.throws(() => parseConfig(args, env, HOME), (error: unknown) => {
        assert.ok(error instanceof UsageError);
        assert.match(error.message, new RegExp(named.replace(/[-]/g, "\\-")));
        assert.ok(!error.message.includes("\n"));
        return true;
      });
    });
  }

  it("parses every subcommand with its arguments", () => {
    for (const cmd of ["list", "verify", "doctor", "serve"]) assert.equal(parseConfig([cmd], {}, HOME).command, cmd);
    for (const cmd of ["show", "export", "restore"]) assert.equal(parseConfig([cmd, "abc"], {}, HOME).command, cmd);
    assert.equal(parseConfig(["store", "migrate"], {}, HOME).command, "store");
    assert.equal(parseConfig(["--help"], {}, HOME).command, "help");
    assert.equal(parseConfig(["--version"], {}, HOME).command, "version");
    assert.equal(parseConfig(["-V"], {}, HOME).command, "version");
    assert.equal(parseConfig(["list", "-h"], {}, HOME).helpFor, "list");
  });

  it("takes everything after -- as arguments, and a value that starts with a dash as the flag's value", () => {
    assert.deepEqual(parseConfig(["search", "--", "--literal"], {}, HOME).positional, ["--literal"]);
    assert.equal(parseConfig(["list", "--mirror-dir", "-odd-name"], {}, HOME).mirrorDir, "-odd-name");
  });
});
