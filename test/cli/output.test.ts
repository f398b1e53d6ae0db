// Recovery output arrives whole: `export`, `show --json` and `list --json` of a multi-megabyte session,
// written to a pipe whose reader is slow, reach the reader byte for byte and exit 0; when the reader goes
// away, the command exits non-zero and says so. Runs the real process: the source under the test's
// runtime, or the compiled binary when SESSIONTAP_BINARY is set.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import process from "node:process";
import { ROOT, runTap, tapCommand } from "../support/child.ts";
import { rec, scratchDir, writeMirror } from "../support/recover.ts";

const SESSION = "0b0e0b0e-1111-4222-8333-444455556666";
const CHILD_MS = 60_000;

/** A session of `turns` exchanges with ~4 KB of text each (multi-megabyte in all). */
function bigSession(turns: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let parent: string | null = null;
  for (let i = 0; i < turns; i++) {
    const u = `00000000-0000-4000-8000-${String(2 * i).padStart(12, "0")}`;
    const a = `00000000-0000-4000-8000-${String(2 * i + 1).padStart(12, "0")}`;
    out.push(rec("user", u, parent, `question ${i}: ${"why? ".repeat(400)}`, { sessionId: SESSION }));
    out.push(rec("assistant", a, u, [{ type: "text", text: `answer ${i}: ${"because. ".repeat(500)}` }], { sessionId: SESSION }));
    parent = a;
  }
  return out;
}

/** Quotes a word for bash. */
const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * Runs the tap with `args` in a shell pipeline `tap … | READER`, as a user would; resolves with the tap's
 * own exit status (bash's PIPESTATUS) and its stderr.
 */
function pipeline(args: string[], env: Record<string, string>, reader: string): Promise<{ status: number; stderr: string }> {
  const { command, args: argv } = tapCommand(args);
  const script = `${[command, ...argv].map(quote).join(" ")} | ${reader}; echo "tap-status=\${PIPESTATUS[0]}" >&2`;
  const child = spawn("bash", ["-c", script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += Buffer.from(chunk).toString("utf8")));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => (child.kill("SIGKILL"), reject(new Error(`pipeline did not end: ${stderr}`))), CHILD_MS);
    child.on("close", () => {
      clearTimeout(timer);
      const status = /tap-status=(\d+)/.exec(stderr);
      if (status === null) reject(new Error(`no status: ${stderr}`));
      else resolve({ status: Number(status[1]), stderr: stderr.replace(/tap-status=\d+\n?/, "") });
    });
  });
}

describe("output to a slow pipe is whole; a reader that leaves is a non-zero exit", () => {
  const scratch = scratchDir("sessiontap-output-");
  const root = `${scratch.dir}/mirror`;
  const env = { HOME: scratch.dir, CLAUDE_CONFIG_DIR: `${scratch.dir}/claude` };
  before(() => {
    writeMirror(root, SESSION, bigSession(300));
  });
  after(() => scratch.cleanup());

  const commands: [string, string[], string[] | null][] = [
    ["export (md)", ["export", SESSION], ["export", SESSION, "--out", "OUT"]],
    ["export --format html", ["export", SESSION, "--format", "html"], ["export", SESSION, "--format", "html", "--out", "OUT"]],
    ["export --format jsonl", ["export", SESSION, "--format", "jsonl"], ["export", SESSION, "--format", "jsonl", "--out", "OUT"]],
    ["show --json", ["show", SESSION, "--json"], null],
    ["show", ["show", SESSION], null],
  ];
  for (const [label, args, toFile] of commands) {
    it(`${label}: a reader that starts late and reads slowly gets every byte, exit 0`, { timeout: CHILD_MS }, async () => {
      // The reader is slow on purpose: it starts reading 1.5 s late, then takes 4 KiB at a time.
      const got = `${scratch.dir}/${label.replace(/\W+/g, "-")}.piped`;
      const piped = await pipeline([...args, "--mirror-dir", root], env, `(sleep 1.5; dd bs=4096 status=none > ${quote(got)})`);
      assert.equal(piped.status, 0, piped.stderr);
      let expected: Buffer;
      if (toFile !== null) {
        const out = `${scratch.dir}/${label.replace(/\W+/g, "-")}.out`;
        const r = await runTap([...toFile.map((a) => (a === "OUT" ? out : a)), "--mirror-dir", root], { env, timeoutMs: CHILD_MS });
        assert.equal(r.code, 0, r.stderr);
        expected = readFileSync(out);
      } else {
        expected = Buffer.from((await runTap([...args, "--mirror-dir", root], { env, timeoutMs: CHILD_MS })).stdout, "utf8");
      }
      assert.ok(expected.length > 1024 * 1024, `the session is multi-megabyte (${expected.length} B)`);
      const received = readFileSync(got);
      assert.equal(received.length, expected.length, `every byte reached the slow reader (${received.length} of ${expected.length})`);
      assert.ok(received.equals(expected), "the same bytes as written to a file");
      if (label.includes("json") && !label.includes("jsonl")) JSON.parse(received.toString("utf8"));
    });
  }

  it("a reader that goes away: exit non-zero, and one line saying the output was not written whole", { timeout: CHILD_MS }, async () => {
    const piped = await pipeline(["export", SESSION, "--mirror-dir", root], env, "head -c 16 > /dev/null");
    assert.notEqual(piped.status, 0, "success reported over a partial output");
    assert.ok(piped.status < 128, `a clean exit with a status, not death by a signal (${piped.status})`);
    assert.match(piped.stderr, /^sessiontap: the output was not written whole \(EPIPE.*\): the reader went away$/m);
    assert.equal(piped.stderr.trimEnd().split("\n").length, 1, piped.stderr);
  });
});
