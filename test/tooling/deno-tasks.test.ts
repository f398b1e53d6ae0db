// The Deno tasks, as the docs (README and docs/) document them: every `deno task` they name is defined and run
// here. `dev` serves the tap on Deno (health, one stream, SIGTERM → 0); `test` runs the suite's Deno part
// (narrowed to one file); `compile` builds with `deno compile` up to its denort step, which cannot complete
// without a denort binary (not on npm, not reachable here), so what is checked is that every way of lacking
// one ends in one line naming DENORT_BIN, and that no wrong binary is left behind.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { ROOT, serveTap, spawnTap } from "../support/child.ts";
import { loadFixture, startStub, type StubUpstream } from "../support/stub-upstream.ts";

const DENO = `${ROOT}node_modules/.bin/deno`;
const TASKS: Record<string, string> = JSON.parse(readFileSync(`${ROOT}deno.json`, "utf8")).tasks;
/** The README and every document under docs/, as one text: where the instructions are. */
const README = [`${ROOT}README.md`, ...readdirSync(`${ROOT}docs`).filter((n) => n.endsWith(".md")).map((n) => `${ROOT}docs/${n}`)]
  .map((path) => readFileSync(path, "utf8"))
  .join("\n");
/** The tasks this file runs. */
const TESTED = ["dev", "test", "compile"];

/** Runs `deno task <args>` to completion with `env` added (the parent's DENORT_BIN and tap settings kept out; the test cluster's URL kept). */
function task(args: string[], env: Record<string, string> = {}, timeout = 120_000) {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && k !== "DENORT_BIN" && (!k.startsWith("SESSIONTAP_") || k.startsWith("SESSIONTAP_TEST_"))) base[k] = v;
  }
  const r = spawnSync(DENO, ["task", ...args], { cwd: ROOT, encoding: "utf8", timeout, env: { ...base, NO_COLOR: "1", ...env } });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", all: `${r.stdout}\n${r.stderr}` };
}

describe("the documented deno tasks", () => {
  let scratch: string;
  let stub: StubUpstream;
  before(async () => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-deno-tasks-`);
    stub = await startStub();
  });
  after(async () => {
    await stub?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("every `deno task` the README names is defined in deno.json and run by this file", () => {
    const documented = [...new Set([...README.matchAll(/deno task (\w[\w-]*)/g)].map((m) => m[1]))];
    assert.ok(documented.includes("dev") && documented.includes("compile"), `the README documents dev and compile: ${documented}`);
    for (const name of documented) {
      assert.ok(name in TASKS, `the README names \`deno task ${name}\`, which deno.json does not define`);
      assert.ok(TESTED.includes(name), `\`deno task ${name}\` is documented but not tested here`);
    }
    for (const name of Object.keys(TASKS)) assert.ok(TESTED.includes(name), `deno.json's task ${name} is not tested here`);
  });

  it("no task runs `deno` by name: Deno's task runner would run node_modules/.bin/deno (a binary) as a script", () => {
    for (const [name, command] of Object.entries(TASKS)) assert.doesNotMatch(command, /(^|[;&|]\s*)deno\s/, `task ${name}: ${command}`);
  });

  it("dev: serves the tap on Deno; health, one stream through it, SIGTERM exits 0", { timeout: 60_000 }, async () => {
    const root = `${scratch}/mirror`;
    const tap = spawnTap(["--port", "0", "--upstream", stub.url, "--mirror-dir", root], { command: [DENO, "task", "dev"], env: { HOME: scratch } });
    let signalled = false;
    try {
      const url = (await tap.waitFor("stdout", /export ANTHROPIC_BASE_URL=(http:\/\/127\.0\.0\.1:\d+)\n/, 30_000))[1];
      const health = await (await fetch(`${url}/_tap/health`)).json();
      assert.equal(health.status, "ok");
      assert.equal(health.runtime, "deno");
      const sse = Buffer.from(loadFixture("ts_basic_response"), "utf8");
      stub.enqueue({ kind: "sse", chunks: [sse] });
      const res = await fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "sk-task", "x-claude-code-session-id": "deno-task-session" },
        body: JSON.stringify({ model: "claude-sonnet-4-5", stream: true, max_tokens: 10, messages: [{ role: "user", content: "hello from deno task dev" }] }),
      });
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(sse), "the stream changed on the way through");
    } finally {
      signalled = tap.signal("SIGTERM");
    }
    assert.ok(signalled);
    assert.deepEqual(await tap.exit(30_000), { code: 0, signal: null }, tap.stderr());
    assert.doesNotMatch(tap.stderr(), /SyntaxError/);
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(`${dir}/${e.name}`) : [`${dir}/${e.name}`]));
    const records = files(`${root}/deno-task-session`).filter((f) => f.endsWith(".jsonl")).flatMap((f) => readFileSync(f, "utf8").trim().split("\n"));
    assert.ok(records.some((line) => JSON.parse(line).type === "assistant"), `mirrored: ${records.length} records`);
  });

  it("test: runs the suite's Deno part (here narrowed to one file) and says how many passed", { timeout: 120_000 }, () => {
    const r = task(["test", "test/unit/session-id.test.ts"]);
    assert.equal(r.code, 0, r.all);
    assert.match(r.stdout, /=== deno: .*deno test .*test\/unit\/session-id\.test\.ts/);
    const closing = /^(\d+) passed, (\d+) failed$/m.exec(r.stdout);
    assert.ok(closing !== null && Number(closing[1]) > 0 && closing[2] === "0", r.stdout.slice(-2000));
  });

  it("compile: a DENORT_BIN that does not exist is one line naming it, and no binary", { timeout: 60_000 }, () => {
    const out = `${scratch}/missing-denort/sessiontap-deno`;
    const r = task(["compile"], { DENORT_BIN: `${scratch}/no-such-denort`, SESSIONTAP_DENO_OUT: out });
    assert.equal(r.code, 1, r.all);
    assert.match(
      r.stderr.trim().split("\n").at(-1)!,
      /^sessiontap: deno task compile: DENORT_BIN=\S+no-such-denort does not exist: set DENORT_BIN to a denort binary/,
    );
    assert.doesNotMatch(r.all, /SyntaxError/);
    assert.equal(existsSync(out), false);
  });

  it("compile's entry sets the viewer's client prebuilt, so a compiled tap serves the page with no bundler of its own", { timeout: 120_000 }, async () => {
    const made = spawnSync(process.execPath, ["scripts/deno-compile.mjs", "--entry-only"], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    assert.equal(made.status, 0, made.stderr);
    const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", `${scratch}/entry-mirror`], {
      command: [DENO, "run", "--allow-all", "--unstable-no-legacy-abort", "--no-check", "dist/deno-entry/main.ts"],
    });
    try {
      const page = await (await fetch(`${url}/_tap/`)).text();
      assert.ok(
        page.includes("sessiontap's viewer client, prebuilt by scripts/deno-compile.mjs"),
        "the page runs the prebuilt client, not one bundled at run time",
      );
    } finally {
      tap.signal("SIGTERM");
      await tap.exit();
    }
  });

  it("compile: with the deno CLI as DENORT_BIN it compiles, sees the result is not the tap, and keeps nothing", { timeout: 120_000 }, () => {
    const dir = `${scratch}/cli-as-denort`;
    const out = `${dir}/sessiontap-deno`;
    const r = task(["compile"], { DENORT_BIN: `${ROOT}node_modules/deno/deno${process.platform === "win32" ? ".exe" : ""}`, SESSIONTAP_DENO_OUT: out });
    assert.equal(r.code, 1, r.all);
    assert.match(r.all, /Compile dist\/deno-entry\/main\.ts to /, "deno compile ran to its end");
    assert.match(r.stderr.trim().split("\n").at(-1)!, /does not run the tap \(`--version` said "deno \d.*is not a denort binary.*set DENORT_BIN/);
    assert.equal(existsSync(out), false, "the wrong binary is not left in place");
    assert.deepEqual(existsSync(dir) ? readdirSync(dir) : [], [], "nor its staging file");
  });

  it("compile: without DENORT_BIN, a denort download that fails is one line naming DENORT_BIN", { timeout: 120_000 }, () => {
    // The download goes through a proxy on a closed loopback port: refused at once, and nothing leaves the machine.
    const out = `${scratch}/offline/sessiontap-deno`;
    const proxy = "http://127.0.0.1:9";
    const r = task(["compile"], {
      HTTPS_PROXY: proxy,
      HTTP_PROXY: proxy,
      https_proxy: proxy,
      http_proxy: proxy,
      NO_PROXY: "",
      no_proxy: "",
      SESSIONTAP_DENO_OUT: out,
    });
    assert.equal(r.code, 1, r.all);
    assert.match(r.all, /denort/, "it reached the denort step");
    assert.match(
      r.stderr.trim().split("\n").at(-1)!,
      /^sessiontap: deno task compile: Deno could not download its denort base binary \(.+\); offline, set DENORT_BIN/,
    );
    assert.equal(existsSync(out), false);
  });
});
