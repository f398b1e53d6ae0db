// One judge of Claude Code's transcript, every reader asking it (issue: four readers, three verdicts): over real files, a
// session whose transcript is missing, a stub, behind the mirror, intact, and one that lacks some of the mirror's branch
// but holds a prompt the mirror does not. `list` (its column, its footer, --json), `show` (and --json), the viewer's API
// and `doctor` name the same state; `restore` puts a missing, stub or behind transcript back without --force (a backup
// beside it), refuses the other two saying why, and --force replaces them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { SessionCatalog } from "../../src/storage/mirror-reader.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { cli, rec, scratchDir, writeMirror } from "../support/recover.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { startTestTap, type TestTap } from "../support/tap.ts";

type Rec = Record<string, unknown>;
const ID = {
  missing: "5e550000-0000-4000-8000-000000000001",
  stub: "5e550000-0000-4000-8000-000000000002",
  behind: "5e550000-0000-4000-8000-000000000003",
  intact: "5e550000-0000-4000-8000-000000000004",
  theirs: "5e550000-0000-4000-8000-000000000005",
} as const;
const NOW = Date.parse("2026-01-05T00:00:00.000Z");

describe("one judge of Claude Code's transcript, asked by every reader", () => {
  const scratch = scratchDir("sessiontap-judge-");
  const root = `${scratch.dir}/mirror`;
  const claude = `${scratch.dir}/claude`;
  const cwd = `${scratch.dir}/proj`;
  const project = `${claude}/projects/${encodeProjectDir(cwd)}`;
  const pathOf = (id: string) => `${project}/${id}.jsonl`;
  const run = (args: string[]) => cli([...args, "--mirror-dir", root], { CLAUDE_CONFIG_DIR: claude }, { clock: () => NOW, cwd: scratch.dir });
  /** Claude Code's records of turns: each prompt and its answer by the message id the mirror holds for it. */
  const cc = (id: string, turns: [string, string][]) =>
    turns.flatMap(([prompt, answer], i) => [
      { type: "user", uuid: `${id}-c${i}`, sessionId: id, message: { role: "user", content: prompt } },
      { type: "assistant", uuid: `${id}-d${i}`, sessionId: id, message: { id: `msg_${answer}`, role: "assistant", content: [{ type: "text", text: "ok" }] } },
    ]).map((r) => JSON.stringify(r) + "\n").join("");
  let stub: StubUpstream;
  let tap: TestTap;

  before(async () => {
    mkdirSync(root, { mode: 0o700 });
    mkdirSync(project, { recursive: true });
    for (const id of Object.values(ID)) {
      const env = { sessionId: id, cwd };
      writeMirror(root, id, [
        rec("user", `${id}-u1`, null, "first", env),
        rec("assistant", `${id}-a1`, `${id}-u1`, [{ type: "text", text: "ok 1" }], env),
        rec("user", `${id}-u2`, `${id}-a1`, "second", env),
        rec("assistant", `${id}-a2`, `${id}-u2`, [{ type: "text", text: "ok 2" }], env),
      ]);
    }
    writeFileSync(pathOf(ID.stub), JSON.stringify({ type: "mode", mode: "default", sessionId: ID.stub }) + "\n");
    // Deleted mid-session: Claude Code's fresh file holds only the newest turn.
    writeFileSync(pathOf(ID.behind), cc(ID.behind, [["second", `${ID.behind}-a2`]]));
    writeFileSync(pathOf(ID.intact), cc(ID.intact, [["first", `${ID.intact}-a1`], ["second", `${ID.intact}-a2`]]));
    // The newest turn only, and one the mirror never saw (typed while the tap was not in the way).
    writeFileSync(pathOf(ID.theirs), cc(ID.theirs, [["second", `${ID.theirs}-a2`], ["typed elsewhere", "elsewhere"]]));
    stub = await startStub();
    tap = await startTestTap(stub.url, { CLAUDE_CONFIG_DIR: claude, SESSIONTAP_GUARD: "off" }, {}, scratch.dir); // its mirror root is `root`
  });
  after(async () => {
    await tap?.close();
    await stub?.close();
    scratch.cleanup();
  });

  const expected = { missing: "missing", stub: "stub", behind: "behind", intact: "intact", theirs: "intact" } as const;

  it("list --json, list's column and footer, show and show --json name the same state", async () => {
    const listed = new Map((JSON.parse((await run(["list", "--json"])).stdout) as Rec[]).map((e) => [e.sessionId, e]));
    const table = (await run(["list"])).stdout;
    for (const [name, id] of Object.entries(ID) as [keyof typeof ID, string][]) {
      assert.equal(listed.get(id)?.claudeTranscript, expected[name], name);
      assert.match(table, new RegExp(`^${id} .* ${expected[name]} +${cwd}$`, "m"), name);
      assert.match((await run(["show", id])).stdout, new RegExp(`^Claude +${expected[name]}`, "m"), name);
      assert.equal(JSON.parse((await run(["show", id, "--json"])).stdout).claudeTranscript, expected[name], name);
    }
    assert.deepEqual(listed.get(ID.behind)?.claudeTranscriptLacking, { prompts: 1, answers: 1 });
    assert.deepEqual(listed.get(ID.theirs)?.claudeTranscriptLacking, { prompts: 1, answers: 1 }, "it lacks some, but holds what the mirror lacks");
    assert.match((await run(["show", ID.behind])).stdout, /^Claude +behind \(lacks 1 prompt and 1 answer of the mirror's current branch\) /m);
    assert.match(table, /^3 sessions whose Claude Code transcript is missing, a stub or behind the mirror .*:\n( {2}sessiontap restore \S+\n){3}/m);
    assert.doesNotMatch(table, new RegExp(`restore ${ID.theirs}|restore ${ID.intact}`));
  });

  it("the viewer's API names the same state, in the list and for one session", async () => {
    const list = (await (await fetch(`${tap.url}/_tap/api/sessions`)).json()) as Rec[];
    for (const [name, id] of Object.entries(ID) as [keyof typeof ID, string][]) {
      assert.equal(list.find((s) => s.sessionId === id)?.claudeTranscript, expected[name], name);
      assert.equal((await (await fetch(`${tap.url}/_tap/api/sessions/${id}`)).json()).session.claudeTranscript, expected[name], name);
    }
  });

  it("doctor: a stub and a transcript behind fail, missing warns, the one holding what the mirror lacks warns; each with its command", async () => {
    const out = await run(["doctor", "--json", "--url", "http://127.0.0.1:9"]);
    const transcripts = (JSON.parse(out.stdout) as Rec[]).filter((c) => c.check === "transcripts");
    const of = (id: string) => transcripts.filter((c) => String(c.detail).includes(id)).map((c) => [c.status, c.detail]);
    assert.match(String(of(ID.stub)[0]?.[1]), new RegExp(`a stub; restore it: sessiontap restore ${ID.stub}$`));
    assert.equal(of(ID.stub)[0][0], "fail");
    assert.equal(of(ID.behind)[0][0], "fail");
    assert.match(
      String(of(ID.behind)[0][1]),
      new RegExp(`is behind the mirror: it lacks 1 prompt and 1 answer .*sessiontap restore ${ID.behind} \\(a backup is kept\\)$`),
    );
    assert.equal(of(ID.missing)[0][0], "warn");
    assert.deepEqual(of(ID.intact), []);
    assert.equal(of(ID.theirs)[0][0], "warn");
    assert.match(String(of(ID.theirs)[0][1]), new RegExp(`holds 2 prompts or answers the mirror does not: .*sessiontap restore ${ID.theirs} --force`));
  });

  it("a long-lived reader (the viewer's list) reads only what Claude Code appended since it last judged", async () => {
    let read = 0;
    const counting: FsAdapter = {
      ...nodeFs,
      readRange: async (path, start, end) => ((read += (await nodeFs.readRange(path, start, end)).length), await nodeFs.readRange(path, start, end)),
    };
    const catalog = new SessionCatalog(counting, root, claude, undefined, undefined, () => NOW);
    const judged = async () => (await catalog.list()).find((e) => e.sessionId === ID.intact)!;
    assert.equal((await judged()).claudeTranscript, "intact");
    const line = JSON.stringify({ type: "mode", mode: "default", sessionId: ID.intact }) + "\n";
    appendFileSync(pathOf(ID.intact), line);
    read = 0;
    assert.equal((await judged()).claudeTranscript, "intact");
    assert.ok(read > 0 && read <= line.length + 64, `read ${read} bytes for a ${line.length}-byte append`);
  });

  it("restore: behind is put back without --force, the old file beside it; a file holding what the mirror lacks needs --force, and the refusal says so", async () => {
    const before = readFileSync(pathOf(ID.behind), "utf8");
    const behind = await run(["restore", ID.behind, "--json"]);
    assert.equal(behind.code, 0, behind.stderr);
    const outcome = JSON.parse(behind.stdout);
    assert.deepEqual([outcome.existing, outcome.action], ["behind", "replace"]);
    assert.equal(readFileSync(outcome.backup, "utf8"), before, "Claude Code's file, backed up beside it");
    assert.match(outcome.backup, /\.jsonl\.bak-20260105T000000Z$/);
    const restored = readFileSync(pathOf(ID.behind), "utf8");
    for (const text of ['"first"', '"second"']) assert.ok(restored.includes(text), text);
    assert.match((await run(["show", ID.behind])).stdout, /^Claude +intact/m, "whole again");

    const theirs = readFileSync(pathOf(ID.theirs), "utf8");
    const refused = await run(["restore", ID.theirs]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /holds 2 prompts or answers the mirror does not \(4 user\/assistant records\); left alone\./);
    assert.match(refused.stderr, new RegExp(`sessiontap restore ${ID.theirs} --force`));
    assert.equal(readFileSync(pathOf(ID.theirs), "utf8"), theirs, "nothing written");
    const intact = await run(["restore", ID.intact]);
    assert.equal(intact.code, 1);
    assert.match(intact.stderr, /already holds every prompt and answer of the mirror's current branch/);
    const forced = await run(["restore", ID.theirs, "--force"]);
    assert.equal(forced.code, 0, forced.stderr);
    assert.ok(readdirSync(project).some((n) => n.startsWith(`${ID.theirs}.jsonl.bak-`)));

    assert.equal((await run(["restore", ID.stub])).code, 0);
    assert.equal((await run(["restore", ID.missing])).code, 0);
    assert.ok(existsSync(pathOf(ID.missing)));
  });
});
