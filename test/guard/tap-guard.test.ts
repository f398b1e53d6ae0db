// The guard inside a running tap (real server, real files): on by default when the Claude Code config dir
// exists, off when it does not or with SESSIONTAP_GUARD=off or the mirror off; a lost transcript shows in
// /_tap/health (guard.alerts, a "guard:" problem, degraded), in the viewer's session list and session (the
// banner's data), and as a FAIL in `sessiontap doctor` naming the restore command. The conversation is
// sent the way Claude Code sends it: its session header, its environment block naming the working directory.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import type { StubUpstream } from "../support/stub-upstream.ts";
import { readEvents, startTestTap, type TestTap, withTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";
import { pollAsync } from "../support/poll.ts";
import { cli, scratchDir } from "../support/recover.ts";
import { serveTap } from "../support/child.ts";

const SESSION = "9a0d7c1e-0000-4000-8000-00000000a001";
const FAST = { settleMs: 60, confirmMs: 120, sweepMs: 150 };

describe("the guard in a running tap", { timeout: 60_000 }, () => {
  const scratch = scratchDir("sessiontap-tapguard-");
  const claudeDir = `${scratch.dir}/claude`;
  const cwd = `${scratch.dir}/project`;
  const transcript = `${claudeDir}/projects/${encodeProjectDir(cwd)}/${SESSION}.jsonl`;
  let stub: StubUpstream;
  let tap: TestTap;

  /** What Claude Code writes for one typed prompt and its answer (by the message id the stub gave it). */
  const turn = (prompt: string, n: number, answer: { raw: Uint8Array }) =>
    JSON.stringify({ type: "user", message: { role: "user", content: prompt }, uuid: `u${n}`, sessionId: SESSION }) + "\n" +
    JSON.stringify({
      type: "assistant",
      message: { id: /"id":"(msg_[^"]+)"/.exec(new TextDecoder().decode(answer.raw))![1], role: "assistant", content: [{ type: "text", text: "ok" }] },
      uuid: `a${n}`,
      sessionId: SESSION,
    }) + "\n";

  before(async () => {
    mkdirSync(`${claudeDir}/projects/${encodeProjectDir(cwd)}`, { recursive: true });
  });
  withTap((started) => ({ stub, tap } = started), () => ({ env: { CLAUDE_CONFIG_DIR: claudeDir }, deps: { guard: FAST }, root: `${scratch.dir}/tap` }));
  after(async () => {
    scratch.cleanup();
  });

  it("is on by default when the Claude Code config dir exists, and health shows it", async () => {
    assert.equal(tap.guarded, true);
    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.deepEqual(health.guard, { watching: 0, notFound: 0, alerts: [], looks: 0, bytesRead: 0, errors: 0 });
  });

  it("a transcript lost while mirrored: health, the viewer and doctor all say so, with the restore command", async () => {
    const c = new Conversation(tap, SESSION, {
      system: [{ type: "text", text: `You are Claude Code.\n# Environment\n - Primary working directory: ${cwd}\n` }],
    });
    const first = await c.say("first prompt");
    assert.equal(first.status, 200);
    const second = await c.say("second prompt");
    assert.equal(second.status, 200);
    writeFileSync(transcript, turn("first prompt", 1, first) + turn("second prompt", 2, second));
    await pollAsync(() => tap.engine!.query("guard.inspect", SESSION), (s) => s?.verdict === "ok", 5_000, "a healthy verdict");
    rmSync(transcript);
    await pollAsync(async () => (await tap.engine!.query("guard.health")).alerts, (a) => a.length === 1, 5_000, "the alert");

    const health = await (await fetch(`${tap.url}/_tap/health`)).json();
    assert.equal(health.status, "degraded");
    assert.deepEqual(health.problems, [`guard: Claude Code's transcript of ${SESSION} is missing: sessiontap restore ${SESSION}`]);
    assert.equal(health.guard.alerts[0].sessionId, SESSION);
    assert.equal(health.guard.alerts[0].state, "missing");
    assert.equal(health.guard.watching, 1);
    assert.equal(tap.stderrLines.filter((l) => l.includes(SESSION)).length, 1);
    // The events log is written with the mirror's writes, a moment after the alert is raised.
    const alerted = (events: Record<string, unknown>[]) => events.some((e) => e.action === "guard-alert" && e.session === SESSION && e.state === "missing");
    assert.ok(alerted(await pollAsync(() => readEvents(tap.root), alerted, 5_000, "the guard-alert event")));

    const list = await (await fetch(`${tap.url}/_tap/api/sessions`)).json();
    const entry = list.find((s: Record<string, unknown>) => s.sessionId === SESSION);
    assert.deepEqual([entry.guard.state, entry.guard.command], ["missing", `sessiontap restore ${SESSION}`]);
    const one = await (await fetch(`${tap.url}/_tap/api/sessions/${SESSION}`)).json();
    assert.equal(one.session.guard.state, "missing");

    const doctor = await cli(["doctor", "--json", "--url", tap.url, "--mirror-dir", tap.root, "--claude-dir", claudeDir], {}, { cwd: scratch.dir });
    assert.equal(doctor.code, 1);
    const checks = JSON.parse(doctor.stdout) as { check: string; status: string; detail: string }[];
    assert.deepEqual(checks.filter((c) => c.check === "tap guard").map((c) => [c.status, c.detail]), [
      ["fail", `Claude Code's transcript of ${SESSION} is missing: sessiontap restore ${SESSION}`],
    ]);

    // Put back whole: the alert clears, health is ok again.
    writeFileSync(transcript, turn("first prompt", 1, first) + turn("second prompt", 2, second));
    await pollAsync(async () => (await tap.engine!.query("guard.health")).alerts, (a) => a.length === 0, 5_000, "the alert to clear");
    assert.equal((await (await fetch(`${tap.url}/_tap/health`)).json()).status, "ok");
    const cleared = await (await fetch(`${tap.url}/_tap/api/sessions`)).json();
    assert.equal(cleared.find((s: Record<string, unknown>) => s.sessionId === SESSION).guard, null);
  });

  it("tells a loss within seconds of it, as the file system reports it: the sweep set to a minute is not what finds it", async () => {
    const confirmMs = 2000; // the default: a loss must hold this long before it is told
    await using timed = await startTestTap(stub.url, { CLAUDE_CONFIG_DIR: claudeDir }, { guard: { settleMs: 60, confirmMs, sweepMs: 60_000 } });
    const id = "9a0d7c1e-0000-4000-8000-00000000a002";
    const path = `${claudeDir}/projects/${encodeProjectDir(cwd)}/${id}.jsonl`;
    const c = new Conversation(timed, id, { system: [{ type: "text", text: `You are Claude Code.\n# Environment\n - Primary working directory: ${cwd}\n` }] });
    const said = await c.say("timed prompt");
    assert.equal(said.status, 200);
    writeFileSync(path, turn("timed prompt", 1, said));
    await pollAsync(() => timed.engine!.query("guard.inspect", id), (s) => s?.verdict === "ok", 5_000, "a healthy verdict");
    for (const [loss, state] of [[() => writeFileSync(path, '{"type":"mode","mode":"default"}\n'), "stub"], [() => rmSync(path), "missing"]] as const) {
      const at = Date.now();
      loss();
      await pollAsync(async () => (await timed.engine!.query("guard.health")).alerts, (a) => a[0]?.state === state, confirmMs + 3_000, `the ${state} alert`);
      const took = Date.now() - at;
      assert.ok(
        took >= confirmMs && took < confirmMs + 1_000,
        `told ${took} ms after the ${state} change (docs/GUARD.md: within ${confirmMs / 1000} s and a moment)`,
      );
    }
  });

  it("is off without a Claude Code config dir, with SESSIONTAP_GUARD=off, and with the mirror off", async () => {
    const offs: Record<string, string>[] = [{ CLAUDE_CONFIG_DIR: `${scratch.dir}/none` }, { CLAUDE_CONFIG_DIR: claudeDir, SESSIONTAP_GUARD: "off" }, {
      CLAUDE_CONFIG_DIR: claudeDir,
      SESSIONTAP_MIRROR: "off",
    }];
    for (const env of offs) {
      await using other = await startTestTap(stub.url, env);
      assert.equal(other.guarded, false, JSON.stringify(env));
      assert.equal((await (await fetch(`${other.url}/_tap/health`)).json()).guard, "off");
    }
    await using on = await startTestTap(stub.url, { CLAUDE_CONFIG_DIR: `${scratch.dir}/none`, SESSIONTAP_GUARD: "on" });
    assert.equal(on.guarded, true, "SESSIONTAP_GUARD=on: on even before Claude Code made its dir");
  });

  it("the startup block says where the guard looks, or that it is off", async () => {
    for (
      const [env, line] of [
        [{ CLAUDE_CONFIG_DIR: claudeDir }, new RegExp(`^  guard      watching Claude Code's transcripts under ${claudeDir}/projects$`, "m")],
        [{ CLAUDE_CONFIG_DIR: claudeDir, SESSIONTAP_GUARD: "off" }, /^ {2}guard {6}off$/m],
      ] as [Record<string, string>, RegExp][]
    ) {
      const { tap: child } = await serveTap(["--upstream", stub.url, "--mirror-dir", `${scratch.dir}/child-mirror`], { env });
      try {
        assert.match(child.stdout(), line);
      } finally {
        child.signal("SIGTERM");
        await child.exit(10_000);
      }
    }
  });
});
