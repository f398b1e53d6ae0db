// Secrets in written conversations: `scan` finds each one in the mirror (main, side, subagent files) and in Claude Code's own transcripts
// (subagents' and torn lines too), prints none of it, and changes no byte; `export` in every format and the viewer's export hold none of
// them unless told not to redact, and stay records of the same shape. Real files, in-process commands. Runs under Bun and Deno.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createApp } from "../../src/server/app.ts";
import { bundleScript } from "../../src/runtime/index.ts";
import { createViewer } from "../../src/viewer/routes.ts";
import { cli, rec, scratchDir, writeMirror } from "../support/recover.ts";
import { leaks, secretSamples, snapshot } from "../support/secret-samples.ts";

const A = "5ec7e7aa-0000-4000-8000-00000000000a";
const B = "c1ea7bbb-0000-4000-8000-00000000000b";
const PLACEHOLDER = /\[REDACTED [a-z0-9-]+ [0-9a-f]{8}\]/;

describe("secrets in the mirror and in Claude Code's transcripts", { timeout: 60_000 }, () => {
  const scratch = scratchDir("sessiontap-secrets-");
  const root = `${scratch.dir}/mirror`;
  const claude = `${scratch.dir}/claude`;
  const project = `${claude}/projects/-work-project`;
  const samples = secretSamples();
  const [aws, awsSecret, github, , slack, openssh] = samples;
  const secrets = samples.map((s) => s.secret);
  const scan = (...args: string[]) => cli(["scan", ...args, "--mirror-dir", root, "--claude-dir", claude]);

  before(() => {
    writeMirror(root, A, [
      rec("user", "u1", null, `set up the deploy with\n${aws.line}\n${awsSecret.line}`, { sessionId: A }),
      rec("assistant", "a1", "u1", [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: `curl -H 'Authorization: token ${github.secret}'` } }], {
        sessionId: A,
      }),
      rec("user", "u2", "a1", [{ type: "tool_result", tool_use_id: "toolu_1", content: `bot: ${slack.secret}` }], { sessionId: A }),
      ...samples.slice(5).map((s, i) => rec("user", `p${i}`, i === 0 ? "u2" : `p${i - 1}`, `keep this: ${s.line}`, { sessionId: A })),
    ]);
    writeMirror(root, `${A}/side`, [
      rec("user", "t0", null, "<session>\nname this session", { sessionId: A, isSidechain: true }),
      rec("assistant", "t1", "t0", [{ type: "text", text: JSON.stringify({ title: `Deploy with ${aws.secret}` }) }], { sessionId: A, isSidechain: true }),
    ]);
    writeMirror(root, `${A}/subagents/agent-x`, [rec("user", "s1", null, openssh.line, { sessionId: A, isSidechain: true })]);
    writeMirror(root, B, [
      rec("user", "v1", null, "a clean session about zebras", { sessionId: B }),
      rec("assistant", "w1", "v1", [{ type: "text", text: "ok" }]),
    ]);
    mkdirSync(`${project}/${A}/subagents`, { recursive: true });
    writeFileSync(`${project}/${A}.jsonl`, JSON.stringify(rec("user", "u1", null, aws.line, { sessionId: A })) + "\n");
    appendFileSync(`${project}/${A}.jsonl`, `{"type":"user","message":{"content":"torn ${github.secret}`); // cut short: no newline, no closing brace
    writeFileSync(`${project}/${A}/subagents/agent-y.jsonl`, JSON.stringify(rec("user", "s1", null, slack.line, { sessionId: A })) + "\n");
    writeFileSync(`${project}/${B}.jsonl`, JSON.stringify(rec("user", "v1", null, "a clean session about zebras", { sessionId: B })) + "\n");
  });
  after(() => scratch.cleanup());

  it("scan: one line per finding, each with its kind, session, file:line and at most four characters; no secret printed; exit 1", async () => {
    const before = snapshot(scratch.dir);
    const r = await scan();
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(leaks(r.stdout + r.stderr, secrets), [], "no secret in the output");
    const lines = r.stdout.trimEnd().split("\n");
    for (const line of lines) {
      const m = /^([a-z0-9-]+) {2}(\S+) {2}(\/\S+\.jsonl):(\d+) {2}(.{1,4})…$/.exec(line);
      assert.ok(m, line);
      assert.ok(secrets.some((s) => s.trim().startsWith(m[5])), `the preview is the secret's first characters: ${line}`);
    }
    assert.match(r.stdout, new RegExp(`^aws-access-key-id  ${A}  ${root}/${A}/2026-01-02T03-04-05.000Z.jsonl:1  AKIA…$`, "m"));
    assert.match(r.stdout, new RegExp(`^github-token  ${A}  ${project}/${A}.jsonl:2  ghp_…$`, "m"), "a torn last line is scanned as text");
    assert.match(r.stdout, new RegExp(`^private-key  ${A}  ${root}/${A}/subagents/agent-x/\\S+:1  ----…$`, "m"));
    assert.match(r.stdout, new RegExp(`^slack-token  ${A}  ${project}/${A}/subagents/agent-y.jsonl:1  xoxb…$`, "m"));
    assert.ok(!r.stdout.includes(B), "the clean session yields nothing");
    assert.match(r.stderr, new RegExp(`^sessiontap: scan: ${lines.length} secrets found in 7 files$`, "m"));
    assert.deepEqual(snapshot(scratch.dir), before, "not a byte, a mode or a time changed");
    assert.ok(!existsSync(`${root}/.binding-key`), "no key made either");
  });

  it("scan --json: {kind, sessionId, file, line, source, preview} for every kind, from both places", async () => {
    const r = await scan("--json");
    assert.equal(r.code, 1);
    assert.deepEqual(leaks(r.stdout, secrets), []);
    const found = JSON.parse(r.stdout) as { kind: string; sessionId: string; file: string; line: number; source: string; preview: string }[];
    assert.deepEqual(Object.keys(found[0]), ["kind", "sessionId", "file", "source", "line", "preview"]);
    const kinds = (source: string) => new Set(found.filter((f) => f.source === source).map((f) => f.kind));
    assert.deepEqual([...kinds("mirror")].sort(), [...new Set(samples.map((s) => s.kind))].sort(), "every kind, in the mirror");
    assert.deepEqual([...kinds("claude")].sort(), ["aws-access-key-id", "github-token", "slack-token"]);
    assert.ok(found.some((f) => f.file.includes("/side/") && f.kind === "aws-access-key-id"), "side requests are scanned");
    assert.ok(found.every((f) => f.sessionId === A && f.preview.length <= 5));
  });

  it("scan SESSION: a prefix picks one session from either place; a clean one is exit 0 and nothing; one that matches none is exit 2", async () => {
    const clean = await scan(B.slice(0, 6));
    assert.equal(clean.code, 0, clean.stderr);
    assert.equal(clean.stdout, "");
    assert.match(clean.stderr, /^sessiontap: scan: 0 secrets found in 2 files$/m);
    assert.equal((await scan(B, "--json")).stdout, "[]\n");
    const one = await scan(A.slice(0, 4), "--json");
    assert.ok(JSON.parse(one.stdout).length > 5);
    const none = await scan("zzzz");
    assert.equal(none.code, 2);
    assert.match(none.stderr, /"zzzz" matches no session/);
    assert.equal((await cli(["scan", "--format", "md"])).code, 2, "a flag scan does not take");
  });

  it("scan with no mirror at the root scans Claude Code's transcripts and says so; a line past 16 MiB is named, not passed over", async () => {
    const big = `${claude}/projects/-big`;
    mkdirSync(big);
    writeFileSync(`${big}/${B}.jsonl`, `{"pad":"${"x".repeat(17 * 1024 * 1024)}"}\n${JSON.stringify({ text: github.line })}\n`);
    const r = await cli(["scan", "--mirror-dir", `${scratch.dir}/nowhere`, "--claude-dir", claude, "--json"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^sessiontap: scan: no mirror files under \S+nowhere \(--mirror-dir\)$/m);
    assert.match(r.stderr, new RegExp(`^sessiontap: scan: ${big}/${B}.jsonl: line 1 is longer than 16 MiB; not scanned$`, "m"));
    assert.ok(JSON.parse(r.stdout).some((f: { file: string; line: number }) => f.file === `${big}/${B}.jsonl` && f.line === 2), "the line after it is");
  });

  for (const format of ["md", "html", "jsonl"]) {
    it(`export --format ${format}: no secret, a placeholder for each; --no-redact and SESSIONTAP_REDACT=off keep them`, async () => {
      const run = (args: string[] = [], env = {}) => cli(["export", A.slice(0, 8), "--mirror-dir", root, "--format", format, ...args], env);
      const redacted = await run();
      assert.equal(redacted.code, 0, redacted.stderr);
      assert.deepEqual(leaks(redacted.stdout, secrets), [], "none of the secrets");
      assert.match(redacted.stdout, PLACEHOLDER);
      for (const exact of [await run(["--no-redact"]), await run([], { SESSIONTAP_REDACT: "off" })]) {
        assert.equal(exact.code, 0);
        for (const s of [aws, github, slack]) assert.ok(exact.stdout.includes(s.secret), `${s.kind} kept`);
      }
      if (format === "jsonl") {
        const before = readFileSync(`${root}/${A}/2026-01-02T03-04-05.000Z.jsonl`, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l));
        const after = redacted.stdout.trimEnd().split("\n").map((l) => JSON.parse(l));
        const shape = (v: unknown): unknown => JSON.stringify(v, (_, x) => (typeof x === "string" ? "" : x));
        assert.equal(shape(after), shape(before), "the same records, keys and numbers: only strings changed");
        assert.equal(after[0].message.content.match(/\[REDACTED aws-access-key-id [0-9a-f]{8}\]/)?.length, 1);
      }
    });
  }

  it("one secret, one placeholder: the same in every export of the root, in the title the side request gave, and in the viewer's export", async () => {
    writeFileSync(`${root}/.binding-key`, `${"ab".repeat(32)}\n`, { mode: 0o600 });
    const md = (await cli(["export", A, "--mirror-dir", root])).stdout;
    const jsonl = (await cli(["export", A, "--mirror-dir", root, "--format", "jsonl"])).stdout;
    const placeholder = /\[REDACTED aws-access-key-id [0-9a-f]{8}\]/.exec(jsonl)![0];
    assert.ok(md.includes(placeholder), "md and jsonl agree");
    assert.ok(md.includes(`- Title: Deploy with ${placeholder}\n`), "the title Claude Code was given, redacted with the records");
    assert.ok((await cli(["export", A, "--mirror-dir", root])).stdout.includes(placeholder), "and again");
    const options = {
      mirrorDir: root,
      claudeDir: claude,
      host: "127.0.0.1",
      version: "0",
      bundle: bundleScript,
      onError: (e: unknown) => assert.fail(String(e)),
    };
    for (const redact of [true, false]) {
      const v = createViewer({ ...options, redact });
      try {
        const app = createApp({ forward: async () => new Response(null), health: () => ({}), viewer: v.deps });
        const res = await app.request(`http://127.0.0.1:8787/_tap/api/sessions/${A}/export?format=md`, { headers: { host: "127.0.0.1:8787" } });
        assert.equal(res.status, 200);
        const text = await res.text();
        assert.equal(text.includes(placeholder), redact, redact ? "the viewer's export is the command's" : "SESSIONTAP_REDACT=off");
        assert.equal(text.includes(aws.secret), !redact);
      } finally {
        v.close();
      }
    }
  });
});
