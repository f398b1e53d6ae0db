// With the tap stopped, doctor tells the truth and the fix: Claude Code's requests to a base URL where
// nothing answers fail (they are not "unmirrored": Claude Code retries for minutes, then stops), and the
// one-line bypass is named — `unset ANTHROPIC_BASE_URL`, or the settings file's "env" where the URL comes
// from there. Against a real tap that was started and stopped, in-process doctor.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { serveTap } from "../support/child.ts";
import { cli, scratchDir } from "../support/recover.ts";

describe("doctor with the tap stopped", () => {
  const scratch = scratchDir("sessiontap-dead-tap-");
  let url: string;
  before(async () => {
    const started = await serveTap(["--no-mirror"]);
    url = started.url;
    started.tap.signal("SIGTERM");
    assert.equal((await started.tap.exit(20_000)).code, 0);
    mkdirSync(`${scratch.dir}/claude`, { recursive: true });
    writeFileSync(`${scratch.dir}/claude/settings.json`, JSON.stringify({ cleanupPeriodDays: 365 }));
  });
  after(() => scratch.cleanup());

  const doctor = (env: Record<string, string>, cwd = scratch.dir) =>
    cli(["doctor", "--mirror-dir", `${scratch.dir}/mirror`, "--claude-dir", `${scratch.dir}/claude`], env, { cwd });

  it("ANTHROPIC_BASE_URL in the environment: requests fail, what Claude Code does then, and `unset ANTHROPIC_BASE_URL`; exit 1", async () => {
    const r = await doctor({ ANTHROPIC_BASE_URL: url });
    assert.equal(r.code, 1);
    const line = r.stdout.split("\n").find((l) => /^FAIL +ANTHROPIC_BASE_URL /.test(l)) ?? "";
    assert.match(
      line,
      new RegExp(`${url} in the environment: nothing answers at ${url} \\(connection refused( \\(ECONNREFUSED\\))?\\)\\. Claude Code's requests fail`),
    );
    assert.match(line, /retries for about 3 minutes .* then stops with "API Error: Connection refused"/);
    assert.match(line, /Start the tap \(sessiontap serve, or run sessiontap claude\), or go around it: unset ANTHROPIC_BASE_URL$/);
    assert.doesNotMatch(r.stdout, /not mirrored|Is the computer able/);
    assert.match(r.stdout, new RegExp(`^FAIL +tap +nothing answers at ${url} .*start it: sessiontap serve`, "m"));
  });

  it("ANTHROPIC_BASE_URL from a project's settings: the bypass is that file's \"env\"", async () => {
    const project = `${scratch.dir}/project`;
    mkdirSync(`${project}/.claude`, { recursive: true });
    writeFileSync(`${project}/.claude/settings.json`, JSON.stringify({ env: { ANTHROPIC_BASE_URL: url } }));
    const r = await doctor({}, project);
    assert.equal(r.code, 1);
    const line = r.stdout.split("\n").find((l) => /^FAIL +ANTHROPIC_BASE_URL /.test(l)) ?? "";
    assert.match(line, /Claude Code's requests fail/);
    assert.ok(line.endsWith(`go around it: remove ANTHROPIC_BASE_URL from "env" in ${project}/.claude/settings.json`), line);
  });
});
