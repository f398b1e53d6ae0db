// `sessiontap doctor` knows the traps users hit: Claude Code's cleanup (unset, or a very large
// cleanupPeriodDays, seen ignored) and a mirror retention that deletes no later than it, a transcript
// behind the mirror (it lacks prompts the tap saw sent), a transcript ending in a torn line, and the state of
// the tap's guard (off; transcripts it cannot find; its alerts, as FAIL checks from health's problems). Each
// problem names the command that fixes it. In-process, against hand-made mirrors and Claude Code dirs.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { cli, rec, scratchDir, tapFetch, writeMirror } from "../support/recover.ts";

type Check = { check: string; status: string; detail: string };
const S = "d0c70000-0000-4000-8000-000000000001";
const NOW = Date.parse("2026-01-05T00:00:00.000Z");
const TAP = "http://127.0.0.1:8787";

/** A fetch under which a tap mirroring to `root` answers with `extra` in its health; nothing else answers. */
const tapWith = (root: string, extra: Record<string, unknown> = {}) =>
  tapFetch(TAP, { status: "ok", problems: [], version: "0.1.0", runtime: "bun", mirror: { root }, ...extra });

describe("doctor: the traps that lose transcripts", () => {
  const scratch = scratchDir("sessiontap-doctor-");
  after(() => scratch.cleanup());
  const cwd = `${scratch.dir}/proj`;
  let n = 0;

  /** A fresh mirror and Claude Code dir: the mirror holds three typed prompts; Claude Code's transcript is `transcript`. */
  function setup(transcript: string | null, settings: Record<string, unknown> = { cleanupPeriodDays: 365 }) {
    const dir = `${scratch.dir}/case-${++n}`;
    const root = `${dir}/mirror`;
    const claude = `${dir}/claude`;
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const env = { sessionId: S, cwd };
    writeMirror(root, S, [
      rec("user", "u1", null, [{ type: "text", text: "<system-reminder>\nctx\n</system-reminder>\n" }, { type: "text", text: "one" }], env),
      rec("assistant", "a1", "u1", [{ type: "text", text: "ok 1" }], env),
      rec("user", "u2", "a1", "two", env),
      rec("assistant", "a2", "u2", [{ type: "text", text: "ok 2" }], env),
      rec("user", "u3", "a2", "three", env),
      rec("assistant", "a3", "u3", [{ type: "text", text: "ok 3" }], env),
    ]);
    mkdirSync(`${claude}/projects/${encodeProjectDir(cwd)}`, { recursive: true });
    writeFileSync(`${claude}/settings.json`, JSON.stringify(settings));
    if (transcript !== null) writeFileSync(`${claude}/projects/${encodeProjectDir(cwd)}/${S}.jsonl`, transcript);
    return { root, claude, path: `${claude}/projects/${encodeProjectDir(cwd)}/${S}.jsonl` };
  }
  /** Claude Code's records of typed prompts, one user and one assistant record each (the answer's message id as the mirror has it). */
  const cc = (...prompts: string[]) =>
    prompts.map((p, i) =>
      JSON.stringify({ type: "user", message: { role: "user", content: p }, uuid: `c${i}`, sessionId: S }) + "\n" +
      JSON.stringify({
        type: "assistant",
        message: { id: `msg_a${["one", "two", "three"].indexOf(p) + 1}`, role: "assistant", content: [{ type: "text", text: "ok" }] },
        uuid: `d${i}`,
        sessionId: S,
      }) + "\n"
    ).join("");
  const doctor = async (c: { root: string; claude: string }, env: Record<string, string> = {}, health: Record<string, unknown> = {}) => {
    const out = await cli(["doctor", "--json", "--mirror-dir", c.root, "--claude-dir", c.claude], { ANTHROPIC_BASE_URL: TAP, ...env }, {
      clock: () => NOW,
      cwd: scratch.dir,
      fetch: tapWith(c.root, health),
    });
    return { code: out.code, checks: JSON.parse(out.stdout) as Check[] };
  };

  it("a whole transcript: ok", async () => {
    const { code, checks } = await doctor(setup(cc("one", "two", "three")));
    assert.deepEqual(checks.filter((c) => c.check === "transcripts").map((c) => c.status), ["ok"]);
    assert.equal(code, 0, JSON.stringify(checks));
  });

  it("a transcript behind the mirror (deleted and started afresh): FAIL, with restore (no --force: it holds nothing the mirror lacks)", async () => {
    const { code, checks } = await doctor(setup(cc("three")));
    assert.equal(code, 1);
    const behind = checks.filter((c) => c.check === "transcripts");
    assert.equal(behind.length, 1);
    assert.equal(behind[0].status, "fail");
    assert.match(
      behind[0].detail,
      new RegExp(
        `^${S} \\(.*\\): Claude Code's transcript is behind the mirror: it lacks 2 prompts and 2 answers of the session's current branch .*quit Claude Code, then: sessiontap restore ${S} \\(a backup is kept\\)$`,
      ),
    );
  });

  it("a transcript ending in a torn line: a warning, with restore --force", async () => {
    const c = setup(cc("one", "two", "three") + '{"parentUuid":"d2","type":"user","message":{"role":"us');
    const { checks } = await doctor(c);
    const torn = checks.filter((x) => x.check === "transcripts");
    assert.deepEqual(torn.map((x) => x.status), ["warn"]);
    assert.match(torn[0].detail, new RegExp(`^${c.path} ends in a torn line .*sessiontap restore ${S} --force`));
  });

  it("a very large cleanupPeriodDays: a warning that Claude Code may ignore it, naming the mirror's own retention", async () => {
    const c = setup(cc("one", "two", "three"), { cleanupPeriodDays: 99999 });
    const { checks } = await doctor(c);
    const cleanup = checks.find((x) => x.check === "cleanupPeriodDays")!;
    assert.equal(cleanup.status, "warn");
    assert.match(
      cleanup.detail,
      /^99999 \(.*settings\.json\): Claude Code has been seen to ignore very large values .*3650 keeps them ten years\. The mirror is the safety net: SESSIONTAP_RETENTION_DAYS=0 \(the default\), it keeps every session/,
    );
    const limited = (await doctor(c, { SESSIONTAP_RETENTION_DAYS: "30" })).checks.find((x) => x.check === "cleanupPeriodDays")!;
    assert.match(limited.detail, /SESSIONTAP_RETENTION_DAYS=30, it keeps sessions 30 days \(set it higher, or 0 to keep them all\)/);
    assert.equal(
      (await doctor(setup(cc("one", "two", "three"), { cleanupPeriodDays: 3650 }))).checks.find((x) => x.check === "cleanupPeriodDays")!.status,
      "ok",
    );
  });

  it("Claude Code's cleanup is named as the trap it is, and the mirror's retention is judged against it", async () => {
    const unset = setup(cc("one", "two", "three"), {});
    const trap = (await doctor(unset)).checks.find((x) => x.check === "cleanupPeriodDays")!;
    assert.equal(trap.status, "warn");
    assert.match(
      trap.detail,
      /^not set: Claude Code deletes transcripts older than 30 days when it starts; .*"cleanupPeriodDays": 3650 .*The mirror is the safety net: SESSIONTAP_RETENTION_DAYS=0 \(the default\), it keeps every session$/,
    );
    const retention = async (settings: Record<string, unknown>, days?: string) => {
      const env: Record<string, string> = days === undefined ? {} : { SESSIONTAP_RETENTION_DAYS: days };
      const found = (await doctor(setup(cc("one", "two", "three"), settings), env)).checks.find((x) => x.check === "mirror retention")!;
      return [found.status, found.detail];
    };
    assert.deepEqual(await retention({}), [
      "ok",
      "off (the default): the mirror keeps every session, those Claude Code's cleanup deleted included (list shows them missing; sessiontap restore ID brings one back)",
    ]);
    const [status, detail] = await retention({}, "30");
    assert.equal(status, "warn");
    assert.match(
      detail,
      /^SESSIONTAP_RETENTION_DAYS=30: the mirror deletes a session after 30 days, no later than Claude Code's cleanup .*\(30 days\), so no copy outlives it; unset it/,
    );
    assert.equal((await retention({ cleanupPeriodDays: 365 }, "365"))[0], "warn");
    assert.deepEqual(await retention({ cleanupPeriodDays: 365 }, "400"), [
      "ok",
      "SESSIONTAP_RETENTION_DAYS=400: the mirror keeps sessions 400 days, past Claude Code's cleanup (365)",
    ]);
    // A very large cleanupPeriodDays has been seen ignored: the mirror is judged against the 30 days then.
    assert.deepEqual(await retention({ cleanupPeriodDays: 99999 }, "100"), [
      "ok",
      "SESSIONTAP_RETENTION_DAYS=100: the mirror keeps sessions 100 days, past Claude Code's cleanup (30)",
    ]);
  });

  it("the tap's guard: off is a warning; transcripts it cannot find are a warning; its alerts are FAIL checks with the restore command", async () => {
    const c = setup(cc("one", "two", "three"));
    const off = (await doctor(c, {}, { guard: "off" })).checks.find((x) => x.check === "guard")!;
    assert.equal(off.status, "warn");
    assert.match(off.detail, /SESSIONTAP_GUARD=on turns it on/);
    const blind = (await doctor(c, {}, { guard: { watching: 2, notFound: 2, alerts: [] } })).checks.find((x) => x.check === "guard")!;
    assert.equal(blind.status, "warn");
    assert.match(blind.detail, /not found Claude Code's transcript of 2 sessions .*--claude-dir/);
    const alert = { sessionId: S, state: "missing", since: "2026-01-04T00:00:00.000Z", path: null, command: `sessiontap restore ${S}` };
    const problem = `guard: Claude Code's transcript of ${S} is missing: sessiontap restore ${S}`;
    const { code, checks } = await doctor(c, {}, { status: "degraded", problems: [problem], guard: { watching: 1, notFound: 0, alerts: [alert] } });
    assert.equal(code, 1);
    assert.deepEqual(checks.filter((x) => x.check.includes("guard")).map((x) => [x.check, x.status, x.detail]), [
      ["tap guard", "fail", `Claude Code's transcript of ${S} is missing: sessiontap restore ${S}`],
    ]);
    const quiet = (await doctor(c, {}, { guard: { watching: 1, notFound: 0, alerts: [] } })).checks.find((x) => x.check === "guard")!;
    assert.deepEqual([quiet.status, quiet.detail], ["ok", "watching 1 active session, no alert"]);
  });

  it("one guard alert is one line with one severity: the session's transcript check does not say it again", async () => {
    const c = setup(null); // Claude Code's transcript is missing, and the guard has told it
    const alert = { sessionId: S, state: "missing", since: "2026-01-04T00:00:00.000Z", path: null, command: `sessiontap restore ${S}` };
    const problem = `guard: Claude Code's transcript of ${S} is missing: sessiontap restore ${S}`;
    const { code, checks } = await doctor(c, {}, { status: "degraded", problems: [problem], guard: { watching: 1, notFound: 0, alerts: [alert] } });
    assert.equal(code, 1);
    assert.deepEqual(checks.filter((x) => x.detail.includes(S)).map((x) => [x.check, x.status]), [["tap guard", "fail"]]);
    const without = (await doctor(c)).checks.filter((x) => x.detail.includes(S)).map((x) => [x.check, x.status]);
    assert.deepEqual(without, [["transcripts", "warn"]], "with no alert, the transcript check says it");
  });
});
