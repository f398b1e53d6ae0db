// Hostile ids (docs/RELIABILITY.md "Trust boundaries", holes 2 and 3): an id is only ever a name inside its parent. Ids that
// climb (`../../victim`), ids too long for a file name, and ids that are the tap's own names (`.locks`,
// `.staging`, `.spool`, the events log, `unknown`, `inv-<hash of another id>`) are mirrored like any
// other session, listed, never read or written outside, and never share a directory. In-process (the
// tap, the CLI through main(), the viewer's routes); runs under Bun and Deno.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirName, isReservedName, nameInside, transcriptName } from "../../src/protocol/session-id.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { createApp } from "../../src/server/app.ts";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { bundleScript } from "../../src/runtime/index.ts";
import { createViewer } from "../../src/viewer/routes.ts";
import { Conversation } from "../support/client.ts";
import { cli, rec, scratchDir, writeMirror } from "../support/recover.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, readEvents, startTestTap } from "../support/tap.ts";

import type { Rec } from "../support/claude.ts";
const inv = (id: string) => "inv-" + createHash("sha256").update(id, "utf8").digest("hex").slice(0, 16);

describe("an id only ever becomes a name inside its parent", () => {
  it("nameInside() and transcriptName() refuse anything that is not one plain name", () => {
    for (const id of ["../../x", "a/b", "a\\b", "a\u0000b", ".", "..", "", "x".repeat(129), "é", "a b"]) {
      assert.equal(nameInside(id), null, JSON.stringify(id.slice(0, 20)));
      assert.equal(transcriptName(id), null, JSON.stringify(id.slice(0, 20)));
    }
    assert.equal(nameInside("x".repeat(128), ".jsonl"), "x".repeat(128) + ".jsonl");
    assert.equal(nameInside("abc", "/../x"), null, "nor can a suffix climb");
    assert.equal(transcriptName(".hidden"), null, "no Claude Code session is a hidden file");
    assert.equal(transcriptName("97ca207e-a339-4945-8a67-b4c188d5249f"), "97ca207e-a339-4945-8a67-b4c188d5249f.jsonl");
  });

  it("the tap's own names and the hashed namespace are unreachable by a plain id", () => {
    const own = [
      ".locks",
      ".staging",
      ".spool",
      ".sessiontap-probe-x",
      "session-mirror-events.jsonl",
      "session-mirror-events.1.jsonl",
      "unknown",
      "UNKNOWN",
      "inv-0123456789abcdef",
      "INV-x",
    ];
    for (const id of own) {
      assert.ok(isReservedName(id), id);
      assert.match(dirName(id), /^inv-[0-9a-f]{16}$/, id);
    }
    const other = "some/odd id";
    assert.notEqual(dirName(inv(other)), dirName(other), "an id spelling another id's hashed name gets a directory of its own");
    assert.equal(dirName("a-plain.id_1"), "a-plain.id_1");
  });
});

describe("reserved and colliding session ids through a tap", () => {
  let stub: StubUpstream;
  const scratch = scratchDir("sessiontap-ids-");
  const root = `${scratch.dir}/mirror`;
  const hostile = [".locks", ".staging", ".spool", "session-mirror-events.jsonl", "session-mirror-events.1.jsonl", "unknown"];
  const odd = "an id/with a slash";
  const lookalike = inv(odd);
  before(async () => {
    stub = await startStub();
  });
  after(async () => {
    await stub.close();
    scratch.cleanup();
  });

  it("each is mirrored into its own directory, shown by list, and none lands in the tap's own places", async () => {
    await using tap = await startTestTap(stub.url, {}, {}, scratch.dir);
    for (const id of [...hostile, odd, lookalike]) {
      assert.equal((await new Conversation(tap, id).say(`hello from ${id}`)).status, 200, id);
    }
    assert.equal((await new Conversation(tap, null).say("no session at all")).status, 200);
    await tap.close();
    const errors = readEvents(root).filter((e) => e.action === "error");
    assert.deepEqual(errors, [], "no write was refused or retried");
    for (const own of [".locks", ".staging", ".spool"]) {
      const names = existsSync(`${root}/${own}`) ? readdirSync(`${root}/${own}`, { recursive: true }).map(String) : [];
      assert.ok(!names.some((n) => n.endsWith(".jsonl") && !n.startsWith("mirror")), `${own} holds no mirror file: ${names}`);
    }
    const events = readFileSync(`${root}/session-mirror-events.jsonl`, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    assert.ok(events.every((e) => typeof e.action === "string" && e.type === undefined), "the events log holds only events");
    assert.deepEqual(
      readdirSync(root).filter((n) => n.startsWith("session-mirror-events")),
      ["session-mirror-events.jsonl"],
      "no session took the events log's names",
    );
    const unknown = allRecords(`${root}/unknown`);
    assert.ok(unknown.length > 0 && unknown.every((r) => !("sessionId" in r)), "`unknown` holds only sessionless records");
    assert.ok(allRecords(`${root}/${inv(odd)}`).every((r) => r.sessionId === odd), "the odd id's hashed directory is its own");
    const listed = JSON.parse((await cli(["list", "--json", "--mirror-dir", root], { CLAUDE_CONFIG_DIR: `${scratch.dir}/claude` })).stdout) as Rec[];
    const ids = listed.map((e) => e.sessionId);
    for (const id of [...hostile, odd, lookalike]) assert.ok(ids.includes(id), `${id} is listed`);

    // After a restart both the odd id and its lookalike are still written (before: both refused).
    await using again = await startTestTap(stub.url, {}, {}, scratch.dir);
    assert.equal((await new Conversation(again, odd).say("odd again")).status, 200);
    assert.equal((await new Conversation(again, lookalike).say("lookalike again")).status, 200);
    await again.close();
    assert.deepEqual(readEvents(root).filter((e) => e.action === "error"), [], "nothing refused after the restart");
    assert.equal(allRecords(`${root}/${dirName(lookalike)}`).filter((r) => r.type === "user").length, 2);
  });
});

describe("ids that cannot be a Claude Code session file name", () => {
  const scratch = scratchDir("sessiontap-ids-");
  const root = `${scratch.dir}/mirror`;
  const claude = `${scratch.dir}/claude`;
  const cwd = `${scratch.dir}/proj`;
  const long = "L".repeat(250);
  // From <claude>/projects/<project>/ four levels up is the scratch directory itself.
  const climbing = "../../../victim";
  const run = (args: string[]) =>
    cli([...args, "--mirror-dir", root], { CLAUDE_CONFIG_DIR: claude }, { clock: () => Date.parse("2026-01-05T00:00:00Z"), cwd: scratch.dir });
  const conversation = (sessionId: string) => [
    rec("user", `${sessionId.length}-u1`, null, "a prompt", { sessionId, cwd }),
    rec("assistant", `${sessionId.length}-a1`, `${sessionId.length}-u1`, [{ type: "text", text: "an answer" }], { sessionId, cwd }),
  ];
  before(() => {
    mkdirSync(root, { mode: 0o700 });
    writeMirror(root, dirName(long), conversation(long));
    writeMirror(root, dirName(climbing), conversation(climbing));
    mkdirSync(`${claude}/projects/${encodeProjectDir(cwd)}`, { recursive: true });
    // An intact "transcript" outside Claude Code's tree, where the climbing id would point.
    writeFileSync(`${scratch.dir}/victim.jsonl`, JSON.stringify(conversation("x")[0]) + "\n");
  });
  after(() => scratch.cleanup());

  it("list --json reports them, with no path and a reason, and never reads outside Claude Code's tree", async () => {
    const r = await run(["list", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const entries = JSON.parse(r.stdout) as Rec[];
    assert.equal(entries.length, 2);
    for (const e of entries) {
      assert.equal(e.claudeTranscript, "missing", e.sessionId);
      assert.equal(e.claudeTranscriptPath, null);
      assert.match(String(e.claudeTranscriptProblem), /cannot be a Claude Code session/);
    }
    const human = await run(["list"]);
    assert.equal(human.code, 0, human.stderr);
    assert.doesNotMatch(human.stdout, /sessiontap restore/, "no restore is suggested for an id Claude Code cannot have");
  });

  it("show, doctor and restore answer without ENAMETOOLONG; restore writes nothing", async () => {
    const shown = await run(["show", dirName(long)]);
    assert.equal(shown.code, 0, shown.stderr);
    const doctor = await run(["doctor", "--json", "--url", "http://127.0.0.1:1"]);
    assert.doesNotMatch(doctor.stderr + doctor.stdout, /ENAMETOOLONG|victim\.jsonl/);
    const checks = JSON.parse(doctor.stdout) as Rec[];
    assert.ok(checks.some((c) => c.check === "transcripts"), doctor.stdout);
    for (const id of [dirName(long), dirName(climbing)]) {
      const restored = await run(["restore", id, "--cwd", cwd]);
      assert.equal(restored.code, 1);
      assert.match(restored.stderr, /no id Claude Code could resume by/);
    }
    assert.deepEqual(readdirSync(`${claude}/projects/${encodeProjectDir(cwd)}`), [], "nothing written in Claude Code's tree");
  });

  it("the viewer's session list answers 200 and exports get a safe file name", async () => {
    const viewer = createViewer({
      fs: nodeFs,
      mirrorDir: root,
      claudeDir: claude,
      host: "127.0.0.1",
      version: "0",
      bundle: bundleScript,
      onError: (e) => assert.fail(String(e)),
    });
    try {
      const app = createApp({ forward: async () => new Response(null, { status: 599 }), health: () => ({}), viewer: viewer.deps });
      const get = (path: string) => app.request(`http://127.0.0.1:8787${path}`, { headers: { host: "127.0.0.1:8787" } });
      const list = await get("/_tap/api/sessions");
      assert.equal(list.status, 200);
      assert.equal((await list.json()).length, 2);
      const one = await get(`/_tap/api/sessions/${dirName(long)}`);
      assert.equal(one.status, 200);
      const exported = await get(`/_tap/api/sessions/${dirName(climbing)}/export?format=md`);
      assert.equal(exported.status, 200);
      assert.equal(exported.headers.get("content-disposition"), `attachment; filename="${dirName(climbing)}.md"`);
    } finally {
      viewer.close();
    }
  });
});
