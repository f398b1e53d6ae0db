// The command restore prints to resume a session: the cwd comes from a request, so it may hold quotes,
// spaces or control characters; printed, it must never carry a raw control character, and pasted into
// bash it must name the same directory.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { resumeCommand } from "../../src/restore/restore-session.ts";

const ID = "0a1b2c3d-0000-4000-8000-000000000001";

describe("resumeCommand", () => {
  it("leaves a plain path bare and single-quotes one with spaces or quotes", () => {
    assert.equal(resumeCommand({ cwd: "/home/me/app", sessionId: ID }), `cd /home/me/app && claude --resume ${ID}`);
    assert.equal(resumeCommand({ cwd: "/home/me/it's mine", sessionId: ID }), `cd '/home/me/it'\\''s mine' && claude --resume ${ID}`);
  });

  it("a cwd holding a NUL names no directory: no cd that a shell would cut short and send elsewhere", () => {
    assert.equal(resumeCommand({ cwd: "/tmp\0/elsewhere", sessionId: ID }), `claude --resume ${ID}`);
  });

  it("writes control characters escaped, and bash takes the printed command to the same directory", () => {
    const scratch = realpathSync(mkdtempSync(`${tmpdir()}/sessiontap-resume-`));
    try {
      for (const name of ["plain", "with space", "it's", "esc\x1b[2Jclear", "new\nline", "bell\x07'and\\back", "del\x7f", "c1\u0085next\u009b"]) {
        const cwd = `${scratch}/${name}`;
        mkdirSync(cwd);
        const command = resumeCommand({ cwd, sessionId: ID });
        // deno-lint-ignore no-control-regex -- the point: no raw control character is printed
        assert.doesNotMatch(command, /[\x00-\x1f\x7f-\x9f]/, JSON.stringify(command));
        const cd = command.slice(0, command.lastIndexOf(" && claude --resume "));
        const reached = execFileSync("bash", ["-c", `${cd} && pwd -P`], { encoding: "utf8" });
        assert.equal(reached.slice(0, -1), cwd, JSON.stringify(command));
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
