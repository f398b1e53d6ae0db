// `sessiontap list | show | restore | doctor` run in-process through `main()` against hand-made mirrors and
// Claude Code directories: what they print, the exit codes of SPEC §2 (0 ok, 1 a problem found or an
// unknown session or a refusal, 2 usage), and restore's file discipline (backups, modes, no clobbering).
// Runs unchanged under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { cli, rec, scratchDir, tapFetch, writeMirror } from "../support/recover.ts";
import type { Rec } from "../support/claude.ts";

const A = "aaaa1111-0000-4000-8000-000000000001";
const B = "aaaa2222-0000-4000-8000-000000000002";
const C = "cccc3333-0000-4000-8000-000000000003";
const NOW = Date.parse("2026-01-05T00:00:00.000Z");
const STAMP = "20260105T000000Z";
const STUB = [{ type: "queue-operation", operation: "enqueue", sessionId: A }, { type: "last-prompt", lastPrompt: "x", sessionId: A }, {
  type: "mode",
  mode: "default",
  sessionId: A,
}];

/** A three-turn conversation with a tool call, in the mirror's shape (system context records included). */
function conversation(sessionId: string, cwd: string, prompt: string): Rec[] {
  const env = { sessionId, cwd };
  return [
    rec("user", `${sessionId}-u1`, null, [{ type: "text", text: "<system-reminder>x</system-reminder>" }, { type: "text", text: prompt }], env),
    rec("system", `${sessionId}-s1`, `${sessionId}-u1`, [{ type: "text", text: `# Environment\n - Primary working directory: ${cwd}` }], env),
    rec("assistant", `${sessionId}-a1`, `${sessionId}-s1`, [{ type: "text", text: "I'll run it." }, {
      type: "tool_use",
      id: "toolu_1",
      name: "Bash",
      input: { command: "echo hi" },
    }], env),
    rec("user", `${sessionId}-u2`, `${sessionId}-a1`, [{ type: "tool_result", tool_use_id: "toolu_1", content: "hi" }], env),
    rec("assistant", `${sessionId}-a2`, `${sessionId}-u2`, [{ type: "text", text: "Done." }], env),
    rec("user", `${sessionId}-u3`, `${sessionId}-a2`, "and again", env),
    rec("assistant", `${sessionId}-a3`, `${sessionId}-u3`, [{ type: "text", text: "Again done." }], env),
  ];
}

describe("list, show, restore, doctor", () => {
  const scratch = scratchDir();
  const root = `${scratch.dir}/mirror`;
  const claude = `${scratch.dir}/claude`;
  const cwdA = `${scratch.dir}/proj-a`;
  const cwdB = `${scratch.dir}/proj-b`;
  const cwdC = `${scratch.dir}/proj-c`;
  const projectOf = (cwd: string) => `${claude}/projects/${encodeProjectDir(cwd)}`;
  const io = { clock: () => NOW, cwd: scratch.dir };
  const run = (args: string[], env: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
    cli([...args, "--mirror-dir", root], { CLAUDE_CONFIG_DIR: claude, ...env }, { ...io, ...extra });

  before(() => {
    mkdirSync(root, { mode: 0o700 });
    writeMirror(root, A, conversation(A, cwdA, "fix the build"));
    writeMirror(root, B, conversation(B, cwdB, "write the docs"));
    writeMirror(root, C, conversation(C, cwdC, "third"));
    writeMirror(root, "inv-0123456789abcdef", [rec("user", "w1", null, "odd id", { sessionId: "odd/../id", cwd: cwdA })]);
    writeMirror(root, "nocwd-session", [rec("user", "n1", null, "no cwd", { sessionId: "nocwd-session", cwd: null })]);
    // Claude Code's side: A is a stub, B is missing, C is intact.
    mkdirSync(projectOf(cwdA), { recursive: true });
    writeFileSync(`${projectOf(cwdA)}/${A}.jsonl`, STUB.map((r) => JSON.stringify(r) + "\n").join(""));
    mkdirSync(projectOf(cwdC), { recursive: true });
    writeFileSync(`${projectOf(cwdC)}/${C}.jsonl`, conversation(C, cwdC, "third").map((r) => JSON.stringify(r) + "\n").join(""));
  });
  after(() => scratch.cleanup());

  describe("list", () => {
    it("--json: every session with the fields of SPEC §2 and Claude Code's transcript state", async () => {
      const out = await run(["list", "--json"]);
      assert.equal(out.code, 0, out.stderr);
      const list: Rec[] = JSON.parse(out.stdout);
      const byId = new Map(list.map((s) => [s.sessionId, s]));
      for (const s of list) {
        for (const key of ["sessionId", "firstTimestamp", "lastTimestamp", "records", "bytes", "cwd", "firstPrompt", "claudeTranscript"]) {
          assert.ok(key in s, key);
        }
      }
      assert.equal(byId.get(A)!.claudeTranscript, "stub");
      assert.equal(byId.get(B)!.claudeTranscript, "missing");
      assert.equal(byId.get(C)!.claudeTranscript, "intact");
      assert.equal(byId.get(A)!.firstPrompt, "fix the build", "Claude Code's reminder is not the prompt");
      assert.equal(byId.get(A)!.records, 7);
      assert.equal(byId.get(A)!.cwd, cwdA);
      assert.equal(byId.get(A)!.bytes, statSync(`${root}/${A}/${readdirSync(`${root}/${A}`)[0]}`).size);
      assert.equal(byId.get("odd/../id")!.dir, "inv-0123456789abcdef");
      assert.ok(Date.parse(list[0].lastTimestamp) >= Date.parse(list[1].lastTimestamp), "most recent first");
    });

    it("text: one row per session with its title (here the first prompt) and project, and the restore command for a lost one", async () => {
      const out = await run(["list"]);
      assert.equal(out.code, 0);
      for (const id of [A, B, C]) assert.ok(out.stdout.includes(id), id);
      assert.match(out.stdout, new RegExp(`^${A} .* ${cwdA}$\\n  fix the build$`, "m"));
      assert.match(out.stdout, /^SESSION +LAST \(UTC\) +TOKENS +COST +CLAUDE +PROJECT$/m);
      assert.match(out.stdout, /sessiontap restore \S+/);
      // A session whose working directory no request named: the column says so, and how to restore it.
      assert.match(out.stdout, /^nocwd-session .* missing +\? \(cwd unknown\)$/m);
      assert.match(
        out.stdout,
        /^PROJECT \? \(cwd unknown\): no request named the working directory; restore asks for it once: sessiontap restore ID --cwd DIR/m,
      );
    });

    it("an empty mirror lists nothing, exit 0; an absent one says so, exit 1; an argument is a usage error", async () => {
      mkdirSync(`${scratch.dir}/empty-root`, { mode: 0o700 });
      const empty = await cli(["list", "--mirror-dir", `${scratch.dir}/empty-root`, "--claude-dir", claude]);
      assert.equal(empty.code, 0);
      assert.match(empty.stdout, /No mirrored sessions/);
      assert.equal((await cli(["list", "--json", "--mirror-dir", `${scratch.dir}/empty-root`])).stdout.trim(), "[]");
      for (const args of [["list"], ["list", "--json"], ["show", "abc"], ["export", "abc"], ["restore", "abc"]]) {
        const absent = await cli([...args, "--mirror-dir", `${scratch.dir}/nothing`]);
        assert.equal(absent.code, 1, `${args.join(" ")}: ${absent.stderr}`);
        assert.equal(absent.stdout, "", "nothing that looks like an (empty) answer");
        assert.match(absent.stderr, new RegExp(`^sessiontap: there is no mirror at ${scratch.dir}/nothing \\(--mirror-dir\\)`));
        assert.equal(absent.stderr.trimEnd().split("\n").length, 1);
      }
      assert.match((await cli(["list"], { SESSIONTAP_MIRROR_DIR: `${scratch.dir}/nothing` })).stderr, /\(SESSIONTAP_MIRROR_DIR\)/);
      assert.match((await cli(["list"], {}, { home: `${scratch.dir}/nohome` })).stderr, /the default ~\/\.claude\/session-mirrors/);
      assert.equal((await run(["list", "extra"])).code, 2);
    });
  });

  describe("show", () => {
    it("a unique prefix shows the facts and the conversation as plain text", async () => {
      const out = await run(["show", "cccc"]);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, new RegExp(`^Session +${C}`, "m"));
      assert.match(out.stdout, /^Title +third$/m);
      assert.match(out.stdout, /^Claude +intact/m);
      assert.ok(out.stdout.includes("\n  ● Bash: echo hi\n    ⎿ hi\n"), "the tool call in one line, its result beneath it");
      assert.ok(
        out.stdout.includes(`\n  ⚙ environment from Claude Code (${`# Environment\n - Primary working directory: ${cwdC}`.length} B; cwd ${cwdC})\n`),
        "the environment block in one line",
      );
      assert.ok(out.stdout.includes("\n  ⚙ reminder (36 B): x\n"), "Claude Code's reminder in one line");
      assert.ok(out.stdout.indexOf("third") < out.stdout.indexOf("Again done."));
      assert.doesNotMatch(out.stdout, /<\/?[a-z][a-z-]*>/, "no tags");
      const full = await run(["show", "cccc", "--full"]);
      assert.match(full.stdout, /"command": "echo hi"/, "--full shows the tool input");
      assert.match(full.stdout, /# Environment\n/, "--full shows the environment block");
    });

    it("counts the conversation one way, said the same way by list --json, show, export and restore: prompts and answers, context apart", async () => {
      const said = "2 prompts and 3 answers (1 tool result; 1 record of Claude Code's context)";
      const listed = (JSON.parse((await run(["list", "--json"])).stdout) as Rec[]).find((s) => s.sessionId === C)!;
      assert.deepEqual(listed.counts, { prompts: 2, answers: 3, toolResults: 1, context: 1 });
      assert.match((await run(["show", C])).stdout, new RegExp(`^Conversation +${said.replace(/[()]/g, "\\$&")}$`, "m"));
      assert.ok((await run(["export", C, "--format", "md"])).stdout.includes(`- Conversation: ${said}\n`));
      assert.ok((await run(["export", C, "--format", "html"])).stdout.includes(`<dt>Conversation</dt><dd>${said.replace("'", "&#39;")}</dd>`));
      const dry = JSON.parse((await run(["restore", C, "--force", "--dry-run", "--json"])).stdout);
      assert.deepEqual(dry.counts, { prompts: 2, answers: 3, toolResults: 1, context: 1 }, "Claude Code's shape of the same turns");
      assert.match((await run(["restore", C, "--force", "--dry-run"])).stdout, new RegExp(`replace it with ${said.replace(/[()]/g, "\\$&")} of session`));
    });

    it("--json: the summary and the conversation's records in reading order", async () => {
      const out = await run(["show", A, "--json"]);
      const shown = JSON.parse(out.stdout);
      assert.equal(shown.sessionId, A);
      assert.equal(shown.claudeTranscript, "stub");
      assert.deepEqual(shown.conversation.map((r: Rec) => r.uuid), conversation(A, cwdA, "").map((r) => r.uuid));
    });

    it("an unknown session is 1, an ambiguous prefix is 1 naming the candidates, no SESSION is 2", async () => {
      const unknown = await run(["show", "ffff"]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /no mirrored session matches "ffff"/);
      const ambiguous = await run(["show", "aaaa"]);
      assert.equal(ambiguous.code, 1);
      assert.ok(ambiguous.stderr.includes(A) && ambiguous.stderr.includes(B), ambiguous.stderr);
      assert.equal((await run(["show"])).code, 2);
      assert.equal((await run(["show", A, B])).code, 2);
    });
  });

  describe("restore", () => {
    const target = (cwd: string, id: string) => `${projectOf(cwd)}/${id}.jsonl`;
    const lines = (path: string): Rec[] => readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));

    it("--dry-run says what it would do and writes nothing", async () => {
      const out = await run(["restore", B, "--dry-run"]);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /Would create .*\n {2}with 2 prompts and 3 answers \(1 tool result; 1 record of Claude Code's context\) of session /);
      assert.equal(existsSync(projectOf(cwdB)), false);
    });

    it("into a missing project directory: creates it 0700 and the transcript 0600, the conversation and its context", async () => {
      const out = await run(["restore", B]);
      assert.equal(out.code, 0, out.stderr);
      const path = target(cwdB, B);
      assert.equal(statSync(projectOf(cwdB)).mode & 0o777, 0o700);
      assert.equal(statSync(path).mode & 0o777, 0o600);
      const written = lines(path);
      assert.deepEqual(written.map((r) => r.type), ["user", "attachment", "assistant", "user", "assistant", "user", "assistant", "last-prompt"]);
      assert.equal(written[1].renderedRole, "system", "the system message's context, after its turn's prompt");
      assert.equal(written[1].parentUuid, written[0].uuid);
      assert.equal(written[2].parentUuid, written[1].uuid, "the answer follows its turn's context");
      assert.ok(written.every((r) => r.sessionId === B && (r.cwd === cwdB || r.type === "last-prompt")));
      assert.ok(out.stdout.includes(`cd ${cwdB} && claude --resume ${B}`), out.stdout);
      assert.deepEqual(readdirSync(projectOf(cwdB)), [`${B}.jsonl`], "no temporary file left behind");
    });

    it("a stub is backed up beside it as <name>.bak-<UTC time> and replaced", async () => {
      const path = target(cwdA, A);
      const stub = readFileSync(path, "utf8");
      const out = await run(["restore", A]);
      assert.equal(out.code, 0, out.stderr);
      assert.equal(readFileSync(`${path}.bak-${STAMP}`, "utf8"), stub);
      assert.deepEqual(lines(path)[0], STUB[2], "the stub's own mode record is kept; its queue and last-prompt bookkeeping are not");
      assert.equal(lines(path).length, 9, "the stub's mode, the conversation and its context, and the last prompt");
      assert.equal(statSync(path).mode & 0o777, 0o600);
      assert.match(out.stdout, /backup .*\.bak-20260105T000000Z \(the stub that was there\)/);
    });

    it("an empty file counts as a stub", async () => {
      const cwd = `${scratch.dir}/proj-empty`;
      mkdirSync(projectOf(cwd), { recursive: true });
      writeFileSync(target(cwd, C), "");
      const out = await run(["restore", C, "--cwd", cwd]);
      assert.equal(out.code, 0, out.stderr);
      assert.equal(readFileSync(`${target(cwd, C)}.bak-${STAMP}`, "utf8"), "");
      assert.ok(lines(target(cwd, C)).filter((r) => r.uuid !== undefined).every((r) => r.cwd === cwd), "--cwd becomes the records' cwd");
    });

    it("a transcript with content is left alone (exit 1); --force backs it up and replaces it", async () => {
      const path = target(cwdC, C);
      const before = readFileSync(path, "utf8");
      const refused = await run(["restore", C]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /already holds every prompt and answer of the mirror's current branch \(6 user\/assistant records\); left alone/);
      assert.match(refused.stderr, /--force/);
      assert.equal(readFileSync(path, "utf8"), before);
      const dry = await run(["restore", C, "--dry-run"]);
      assert.equal(dry.code, 1, "a dry run of a refusal is a refusal");
      const forced = await run(["restore", C, "--force", "--json"]);
      assert.equal(forced.code, 0, forced.stderr);
      const outcome = JSON.parse(forced.stdout);
      assert.equal(outcome.action, "replace");
      assert.equal(outcome.existing, "intact");
      assert.equal(readFileSync(outcome.backup, "utf8"), before);
      assert.ok(!lines(path).some((r) => r.type === "system"));
      // A second forced restore in the same second does not overwrite the first backup.
      const again = JSON.parse((await run(["restore", C, "--force", "--json"])).stdout);
      assert.equal(again.backup, `${path}.bak-${STAMP}-1`);
      assert.equal(readFileSync(outcome.backup, "utf8"), before);
    });

    it("refuses a symlink at the target, a session without a usable id, and one without a known cwd", async () => {
      const cwd = `${scratch.dir}/proj-link`;
      mkdirSync(projectOf(cwd), { recursive: true });
      symlinkSync(`${scratch.dir}/elsewhere.jsonl`, target(cwd, B));
      const link = await run(["restore", B, "--cwd", cwd]);
      assert.equal(link.code, 1);
      assert.match(link.stderr, /symbolic link/);
      assert.equal(existsSync(`${scratch.dir}/elsewhere.jsonl`), false, "nothing written through the link");
      const odd = await run(["restore", "inv-0123"]);
      assert.equal(odd.code, 1);
      assert.match(odd.stderr, /no id Claude Code could resume by/);
      const nocwd = await run(["restore", "nocwd"]);
      assert.equal(nocwd.code, 1);
      assert.match(nocwd.stderr, /^sessiontap: the mirror does not know the working directory of nocwd-session .*pass --cwd DIR .*nothing written\n/);
      assert.match(nocwd.stderr, /^ {2}sessiontap restore nocwd-session --cwd DIR$/m, "the command to run, whole");
      assert.equal(
        existsSync(`${claude}/projects`) &&
          readdirSync(`${claude}/projects`).some((d) => readdirSync(`${claude}/projects/${d}`).includes("nocwd-session.jsonl")),
        false,
      );
    });

    it("refuses a file of another user, and one holding another session's records unless --force (whose records are then not kept)", async () => {
      const cwd = `${scratch.dir}/proj-foreign`;
      mkdirSync(projectOf(cwd), { recursive: true });
      const path = target(cwd, B);
      const other = [{ type: "custom-title", customTitle: "someone else's", sessionId: "ffff0000-0000-4000-8000-00000000000f" }];
      writeFileSync(path, other.map((r) => JSON.stringify(r) + "\n").join(""));
      const refused = await run(["restore", B, "--cwd", cwd]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /holds records of another session \(ffff0000-0000-4000-8000-00000000000f\); left alone\./);
      assert.equal(readFileSync(path, "utf8"), JSON.stringify(other[0]) + "\n", "nothing written");
      const forced = await run(["restore", B, "--cwd", cwd, "--force"]);
      assert.equal(forced.code, 0, forced.stderr);
      assert.ok(!readFileSync(path, "utf8").includes("someone else's"), "another session's record is not carried into this one");
      if (process.getuid?.() === 0) { // only root can make a file another user's
        chownSync(path, 65534, 65534);
        const theirs = await run(["restore", B, "--cwd", cwd, "--force"]);
        assert.equal(theirs.code, 1);
        assert.match(theirs.stderr, /belongs to another user \(uid 65534\); left alone, nothing written/);
      } else console.log("not root: the other user's file is not made here (the refusal is checked where the suite runs as root)");
    });

    it("a session of unknown cwd is restored by asking once: --cwd DIR", async () => {
      const cwd = `${scratch.dir}/proj-nocwd`;
      const out = await run(["restore", "nocwd", "--cwd", cwd]);
      assert.equal(out.code, 0, out.stderr);
      // The directory does not exist: said, and done as asked.
      assert.equal(
        out.stderr,
        `sessiontap: note: ${cwd} (--cwd) does not exist; the transcript is written for it all the same, and Claude Code finds it when claude --resume runs in that directory\n`,
      );
      mkdirSync(`${scratch.dir}/proj-real`);
      const real = await run(["restore", "nocwd", "--cwd", `${scratch.dir}/proj-real`, "--dry-run"]);
      assert.deepEqual([real.code, real.stderr], [0, ""], "an existing directory: nothing to say");
      const written = readFileSync(target(cwd, "nocwd-session"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      assert.deepEqual(written.filter((r: Rec) => r.type === "user").map((r: Rec) => [r.cwd, r.sessionId]), [[cwd, "nocwd-session"]]);
      // Found where it was put, though the mirror still does not know the directory.
      const listed: Rec[] = JSON.parse((await run(["list", "--json"])).stdout);
      assert.deepEqual(listed.filter((s) => s.sessionId === "nocwd-session").map((s) => [s.cwd, s.claudeTranscript]), [[null, "intact"]]);
    });

    it("never clobbers a file that appears while it writes, nor one that changed since it was judged", async () => {
      const cwd = `${scratch.dir}/proj-race`;
      const path = target(cwd, B);
      // Another writer creates the transcript between restore's look and its publication.
      const racing: FsAdapter = {
        ...nodeFs,
        async link(existing, to) {
          if (to === path && !existsSync(path)) writeFileSync(path, "claude's own\n");
          return nodeFs.link(existing, to);
        },
      };
      const appeared = await run(["restore", B, "--cwd", cwd], {}, { fs: racing });
      assert.equal(appeared.code, 1);
      assert.match(appeared.stderr, /appeared while restoring/);
      assert.equal(readFileSync(path, "utf8"), "claude's own\n");
      assert.deepEqual(readdirSync(projectOf(cwd)), [`${B}.jsonl`]);

      // Claude Code appends to the stub while restore backs it up.
      writeFileSync(path, STUB.map((r) => JSON.stringify({ ...r, sessionId: B }) + "\n").join(""));
      const growing: FsAdapter = {
        ...nodeFs,
        async link(existing, to) {
          const linked = await nodeFs.link(existing, to);
          if (existing === path) writeFileSync(path, '{"type":"user","message":{"role":"user","content":"new"}}\n', { flag: "a" });
          return linked;
        },
      };
      const changed = await run(["restore", B, "--cwd", cwd], {}, { fs: growing });
      assert.equal(changed.code, 1);
      assert.match(changed.stderr, /changed while restoring/);
      assert.match(readFileSync(path, "utf8"), /"content":"new"/);
      assert.deepEqual(readdirSync(projectOf(cwd)), [`${B}.jsonl`], "no backup or temporary file left");
    });
  });

  describe("doctor", () => {
    const tap = "http://127.0.0.1:8787";
    /** A fetch under which a tap mirroring to `mirror` answers at 127.0.0.1:8787 and nothing else answers. */
    const tapOf = (mirror: string) => tapFetch(tap, { status: "ok", version: "0.1.0", runtime: "bun", mirror: { root: mirror } });
    const healthy = tapOf(root);
    const down = (async () => {
      throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    }) as unknown as typeof fetch;
    const checks = async (args: string[], env: Record<string, string>, fetchImpl: typeof fetch) => {
      const out = await run(["doctor", "--json", ...args], env, { fetch: fetchImpl });
      return { code: out.code, checks: JSON.parse(out.stdout) as { check: string; status: string; detail: string }[] };
    };

    it("fails on a recent session whose Claude Code transcript is a stub, with the command that restores it", async () => {
      const fresh = scratchDir();
      try {
        const r = `${fresh.dir}/mirror`;
        mkdirSync(r, { mode: 0o700 });
        writeMirror(r, A, conversation(A, cwdA, "x"));
        const cd = `${fresh.dir}/claude`;
        mkdirSync(projectOf(cwdA).replace(claude, cd), { recursive: true });
        writeFileSync(`${projectOf(cwdA).replace(claude, cd)}/${A}.jsonl`, STUB.map((x) => JSON.stringify(x) + "\n").join(""));
        writeFileSync(`${cd}/settings.json`, JSON.stringify({ cleanupPeriodDays: 3650 }));
        const out = await cli(["doctor", "--mirror-dir", r, "--claude-dir", cd], { ANTHROPIC_BASE_URL: tap }, { ...io, fetch: tapOf(r) });
        assert.equal(out.code, 1, out.stdout);
        assert.match(out.stdout, new RegExp(`^FAIL +transcripts +${A} .*a stub; restore it: sessiontap restore ${A}$`, "m"));
        assert.match(out.stdout, /^ok +tap +http:\/\/127\.0\.0\.1:8787 \(ANTHROPIC_BASE_URL in the environment\) is up/m);
        assert.match(out.stdout, /^ok +ANTHROPIC_BASE_URL /m);
        assert.match(out.stdout, /^ok +cleanupPeriodDays +3650 days/m);
        assert.match(out.stdout, /^ok +mirror root /m);
        assert.match(out.stdout, /1 problem, 0 warnings\./);
      } finally {
        fresh.cleanup();
      }
    });

    it("a cwd holding control characters is printed without them, on the session's one line", async () => {
      const fresh = scratchDir();
      try {
        const r = `${fresh.dir}/mirror`;
        mkdirSync(r, { mode: 0o700 });
        const hostile = `${fresh.dir}/proj\x1b[2J\x1b]0;owned\x07\nFAIL  forged line`;
        writeMirror(r, B, conversation(B, hostile, "x"));
        mkdirSync(`${fresh.dir}/claude`);
        const out = await cli(["doctor", "--mirror-dir", r, "--claude-dir", `${fresh.dir}/claude`], { ANTHROPIC_BASE_URL: tap }, { ...io, fetch: tapOf(r) });
        // deno-lint-ignore no-control-regex -- the point: no control character reaches the terminal
        assert.doesNotMatch(out.stdout, /[\x00-\x08\x0b-\x1f\x7f]/, JSON.stringify(out.stdout));
        assert.match(out.stdout, new RegExp(`^warn +transcripts +${B} \\(.*proj.* FAIL  forged line\\): Claude Code's transcript is missing; restore it`, "m"));
        assert.doesNotMatch(out.stdout, /^FAIL {2}forged line/m);
      } finally {
        fresh.cleanup();
      }
    });

    it("everything in order: exit 0", async () => {
      const fresh = scratchDir();
      try {
        const r = `${fresh.dir}/mirror`;
        mkdirSync(r, { mode: 0o700 });
        mkdirSync(`${fresh.dir}/claude`);
        writeFileSync(`${fresh.dir}/claude/settings.json`, JSON.stringify({ cleanupPeriodDays: 365, env: { ANTHROPIC_BASE_URL: tap } }));
        const out = await cli(["doctor", "--mirror-dir", r, "--claude-dir", `${fresh.dir}/claude`], {}, { ...io, fetch: tapOf(r) });
        assert.equal(out.code, 0, out.stdout);
        assert.match(out.stdout, /ANTHROPIC_BASE_URL +http:\/\/127\.0\.0\.1:8787 in .*settings\.json \(env\) reaches a tap/);
        assert.match(out.stdout, /All checks passed\./);
      } finally {
        fresh.cleanup();
      }
    });

    it("a tap mirroring elsewhere is a warning naming both roots", async () => {
      const { checks: list } = await checks([], { ANTHROPIC_BASE_URL: tap }, tapOf("/somewhere/else"));
      const check = list.find((c) => c.check === "tap")!;
      assert.equal(check.status, "warn");
      assert.match(check.detail, /mirroring to \/somewhere\/else; this doctor looked at /);
    });

    it("no tap and no base URL: both fail, with what to do", async () => {
      const { code, checks: list } = await checks([], {}, down);
      assert.equal(code, 1);
      const by = (name: string) => list.find((c) => c.check === name)!;
      assert.equal(by("tap").status, "fail");
      assert.match(by("tap").detail, /nothing answers at http:\/\/127\.0\.0\.1:8787 .*start it: sessiontap serve/);
      assert.equal(by("ANTHROPIC_BASE_URL").status, "fail");
      assert.match(by("ANTHROPIC_BASE_URL").detail, /export ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:8787/);
      assert.equal(by("cleanupPeriodDays").status, "warn", "unset: Claude Code's default of 30 days");
    });

    it("Claude Code's settings win over the environment: a base URL there that is not a tap fails", async () => {
      const project = `${scratch.dir}/proj-settings`;
      mkdirSync(`${project}/.claude`, { recursive: true });
      writeFileSync(`${project}/.claude/settings.json`, JSON.stringify({ env: { ANTHROPIC_BASE_URL: "https://api.anthropic.com" } }));
      const { checks: list } = await checks(["--cwd", project], { ANTHROPIC_BASE_URL: tap }, healthy);
      const base = list.filter((c) => c.check === "ANTHROPIC_BASE_URL");
      assert.deepEqual(base.map((c) => c.status), ["warn", "fail"]);
      assert.match(base[0].detail, /Claude Code applies https:\/\/api\.anthropic\.com/);
    });

    it("a mirror root others can read is a warning; a symlinked one fails", async () => {
      const fresh = scratchDir();
      try {
        mkdirSync(`${fresh.dir}/open`, { mode: 0o755 });
        const open = await cli(["doctor", "--json", "--mirror-dir", `${fresh.dir}/open`, "--claude-dir", claude], { ANTHROPIC_BASE_URL: tap }, {
          ...io,
          fetch: healthy,
        });
        const root = JSON.parse(open.stdout).find((c: Rec) => c.check === "mirror root");
        assert.equal(root.status, "warn");
        assert.match(root.detail, /chmod 700/);
        symlinkSync(`${fresh.dir}/open`, `${fresh.dir}/link`);
        const linked = await cli(["doctor", "--json", "--mirror-dir", `${fresh.dir}/link`, "--claude-dir", claude], {}, { ...io, fetch: healthy });
        assert.equal(linked.code, 1);
        assert.equal(JSON.parse(linked.stdout).find((c: Rec) => c.check === "mirror root").status, "fail");
        assert.ok(lstatSync(`${fresh.dir}/link`).isSymbolicLink());
      } finally {
        fresh.cleanup();
      }
    });
  });
});
