// Secrets typed into the real Claude Code (2.1.328 and 2.1.332), made afresh for each run in their real shapes: an AWS access key and
// secret, a GitHub token, an Anthropic key, a Slack token and an OpenSSH private key. The tree holds them exactly; no export holds any
// unless --no-redact; `scan` finds each kind in the mirror and in Claude Code's own transcript, prints none, and leaves both trees byte for
// byte as they were; a clean session yields nothing; the store holds none, and restored from it into another HOME the session resumes with
// the placeholders. Runs under `bun test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { runTap } from "../support/child.ts";
import { CLAUDE_BIN, CLAUDE_NEXT_BIN, describeRun, makeScratch, type Rec, runClaude, type Scratch, sessionMirror } from "../support/claude.ts";
import { freshDatabase, pollAsync, storedRows, storeStatus, type TestDatabase } from "../support/pg.ts";
import { cli } from "../support/recover.ts";
import { driveOnce } from "../support/scenario.ts";
import { leaks, secretSamples, snapshot } from "../support/secret-samples.ts";
import { thinkingReply } from "../support/sse-build.ts";
import type { StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";

const KINDS = ["aws-access-key-id", "aws-secret-access-key", "github-token", "anthropic-api-key", "slack-token", "private-key"];
const WORDS = ["Deploy", "staging", "cluster", "credentials", "tomorrow", "morning"];

for (const [version, bin] of [["2.1.328", CLAUDE_BIN], ["2.1.332", CLAUDE_NEXT_BIN]]) {
  describe(`secrets typed into Claude Code ${version}: the tree keeps them, exports and scan do not show them`, { timeout: 180_000 }, () => {
    let stub: StubUpstream;
    let tap: TestTap;
    let scratch: Scratch;
    const samples = secretSamples().filter((s) => KINDS.includes(s.kind) && !s.secret.startsWith("github_pat_") && !s.secret.includes("RSA PRIVATE"));
    const secrets = samples.map((s) => s.secret);
    const prompt = `${WORDS.slice(0, 4).join(" ")} below, ${WORDS.slice(4).join(" ")}:\n${samples.map((s) => s.line).join("\n")}`;
    const sessions = { secret: "", clean: "" };
    const scan = (...args: string[]) =>
      runTap(["scan", ...args, "--mirror-dir", tap.root, "--claude-dir", join(scratch.home, ".claude")], { env: { HOME: scratch.home } });

    let db: TestDatabase;
    before(async () => void (db = await freshDatabase(`claude-secrets-${version}`)));
    withTap((started) => ({ stub, tap } = started), () => ({ env: { SESSIONTAP_STORE: db.url } }));
    const ran = driveOnce(async () => {
      await storeStatus(tap.url);
      scratch = makeScratch();
      // The first answer to the prompt thinks about a token (signed): the store leaves that thinking block out, and the resume still works.
      let thought = false;
      stub.setDefault({
        kind: "fn",
        reply: (r) => {
          const body = JSON.parse(new TextDecoder().decode(r.body) || "{}");
          if (thought || body.stream !== true || !body.tools?.length || !JSON.stringify(body.messages ?? []).includes(WORDS[0])) {
            return { kind: "conversation" };
          }
          thought = true;
          return {
            kind: "sse",
            chunks: thinkingReply(`the token ${samples.find((s) => s.kind === "github-token")!.secret} is GitHub's`, "Noted the credentials."),
          };
        },
      });
      for (const [key, text] of [["secret", prompt], ["clean", "say hello to the staging cluster"]] as const) {
        const before = stub.requests.length;
        const run = await runClaude(["-p", text], { baseUrl: tap.url, scratch, bin, timeoutMs: 60_000 });
        assert.equal(run.code, 0, describeRun(run));
        sessions[key] = stub.requests.slice(before).find((r) => r.headers["x-claude-code-session-id"])!.headers["x-claude-code-session-id"];
      }
      await tap.settled();
    });
    after(async () => {
      scratch?.cleanup();
      await db?.drop();
    });

    it("the tree holds every secret exactly as typed, in the prompt's record", () => {
      ran();
      assert.equal(samples.length, KINDS.length);
      const typed = sessionMirror(tap.root, sessions.secret).filter((r: Rec) => r.type === "user").map((r: Rec) => JSON.stringify(r.message.content));
      const record = typed.find((t) => t.includes(JSON.stringify(samples[0].secret).slice(1, -1)));
      assert.ok(record, "the prompt is mirrored");
      for (const s of secrets) assert.ok(record.includes(JSON.stringify(s).slice(1, -1)), `kept exactly: ${s.slice(0, 4)}…`);
    });

    for (const format of ["md", "html", "jsonl"]) {
      it(`export --format ${format}: none of the secrets, all of the prompt's other words; --no-redact: every secret`, async () => {
        ran();
        const redacted = await cli(["export", sessions.secret, "--mirror-dir", tap.root, "--format", format]);
        assert.equal(redacted.code, 0, redacted.stderr);
        assert.deepEqual(leaks(redacted.stdout, secrets), []);
        for (const word of WORDS) assert.ok(redacted.stdout.includes(word), word);
        for (const kind of KINDS) assert.match(redacted.stdout, new RegExp(`\\[REDACTED ${kind} [0-9a-f]{8}\\]`));
        const exact = await cli(["export", sessions.secret, "--mirror-dir", tap.root, "--format", format, "--no-redact"]);
        for (const s of secrets.flatMap((x) => x.split("\n")).filter((p) => p.length >= 12)) {
          assert.ok(exact.stdout.includes(s) || exact.stdout.includes(JSON.stringify(s).slice(1, -1)), `${s.slice(0, 4)}… kept`);
        }
        const clean = (args: string[]) => cli(["export", sessions.clean, "--mirror-dir", tap.root, "--format", format, ...args]);
        assert.equal((await clean([])).stdout, (await clean(["--no-redact"])).stdout, "a clean session exports the same either way");
      });
    }

    it("scan finds each kind in the mirror and in Claude Code's own transcript, prints none of them, and changes no byte of either", async () => {
      ran();
      const before = [snapshot(tap.root), snapshot(join(scratch.home, ".claude"))];
      const text = await scan();
      const json = await scan("--json");
      assert.equal(text.code, 1, text.stderr);
      assert.equal(json.code, 1, json.stderr);
      assert.deepEqual(leaks(text.stdout + text.stderr + json.stdout + json.stderr, secrets), [], "no secret printed");
      const found = JSON.parse(json.stdout) as { kind: string; sessionId: string; source: string; file: string }[];
      for (const source of ["mirror", "claude"]) {
        const kinds = new Set(found.filter((f) => f.source === source && f.sessionId === sessions.secret).map((f) => f.kind));
        assert.deepEqual([...kinds].sort(), [...KINDS].sort(), `every kind in the ${source}`);
      }
      assert.ok(found.some((f) => f.source === "claude" && f.file.endsWith(`/${sessions.secret}.jsonl`)), "Claude Code's transcript of it");
      assert.ok(!found.some((f) => f.sessionId === sessions.clean), "nothing of the clean session");
      for (const line of text.stdout.trimEnd().split("\n")) assert.match(line, /^[a-z-]+ {2}\S+ {2}\/\S+\.jsonl:\d+ {2}.{1,4}…$/);
      assert.deepEqual([snapshot(tap.root), snapshot(join(scratch.home, ".claude"))], before, "both trees as they were");
    });

    it("scan of the clean session alone: nothing, exit 0", async () => {
      ran();
      const r = await scan(sessions.clean, "--json");
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "[]\n");
    });

    it("the store holds none of the secrets and every other word; restored from it into another HOME, the session resumes with the placeholders", async () => {
      ran();
      const rows = await pollAsync(async () => (await storedRows(db.sql)).filter((r) => r.session_id === sessions.secret), (r) => r.length >= 2);
      const stored = rows.map((r) => r.text).join("\n");
      assert.deepEqual(leaks(stored, secrets), [], "no secret in the store");
      for (const word of WORDS) assert.ok(stored.includes(word), word);
      const blocks = (records: Rec[]) => records.flatMap((r: Rec) => (Array.isArray(r.message?.content) ? r.message.content : [])).map((b: Rec) => b.type);
      assert.ok(blocks(sessionMirror(tap.root, sessions.secret)).includes("thinking"), "the tree keeps the signed thinking that named a token");
      assert.ok(!blocks(rows.map((r) => r.entry)).includes("thinking"), "the store leaves it out");
      const colleague = makeScratch();
      try {
        const restored = await cli(["restore", sessions.secret, "--cwd", colleague.project, "--mirror-dir", `${colleague.home}/no-tree`], {
          SESSIONTAP_STORE: db.url,
        }, { home: colleague.home, cwd: colleague.project });
        assert.equal(restored.code, 0, restored.stderr);
        const from = stub.requests.length;
        const run = await runClaude(["-p", "--resume", sessions.secret, "and after the restore"], {
          baseUrl: tap.url,
          scratch: colleague,
          bin,
          timeoutMs: 60_000,
        });
        assert.equal(run.code, 0, describeRun(run));
        const sent = stub.requests.slice(from).map((r) => new TextDecoder().decode(r.body)).find((b) => b.includes("and after the restore"));
        assert.ok(sent, "the resumed turn went upstream");
        assert.ok(sent.includes("Noted the credentials."), "with the answer whose thinking was left out");
        assert.deepEqual(leaks(sent, secrets), [], "the resumed history carries no secret");
        for (const kind of KINDS) assert.match(sent, new RegExp(`\\[REDACTED ${kind} [0-9a-f]{8}\\]`), `${kind}'s placeholder, as ordinary text`);
        for (const word of WORDS) assert.ok(sent.includes(word), word);
      } finally {
        colleague.cleanup();
      }
    });
  });
}
