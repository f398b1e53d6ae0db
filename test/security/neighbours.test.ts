// Hostile neighbours (docs/RELIABILITY.md "Trust boundaries", hole 1): another user of the machine plants directories and files
// where the tap will write, hoping it appends a conversation they can read. The tap writes only into
// directories and files that are its own user's, writable by nobody else, reached without a link — the
// root, session directories, files, `.staging`, `.locks`, the events log, the spool — and refuses anything
// else with one stderr line and an events-log entry. Runs as root here, planting as uid 65534 (nobody);
// anywhere else (not root) the planting cases fail rather than skip, as CI runs them.
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { prepareRoot } from "../../src/cli/serve.ts";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { Conversation } from "../support/client.ts";
import { cli } from "../support/recover.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, readEvents, startTestTap, type TestTap } from "../support/tap.ts";

const NOBODY = 65534;

/** Gives `path` to uid 65534: that needs root, as CI runs this suite, so anything else fails rather than skips. */
function giveAway(path: string): void {
  assert.equal(process.getuid?.(), 0, "planting files as another user needs root (CI runs this suite as root)");
  chownSync(path, NOBODY, NOBODY);
}

/** A directory planted by "another user": made, opened to everyone, given away. */
function plantDir(path: string, mode = 0o777): void {
  mkdirSync(path, { recursive: true });
  chmodSync(path, mode);
  giveAway(path);
}

/** A file planted by "another user". */
function plantFile(path: string, mode = 0o666, text = ""): void {
  writeFileSync(path, text);
  chmodSync(path, mode);
  giveAway(path);
}

/** The events log's refusals (EUNSAFE errors). */
const refusals = (root: string) => readEvents(root).filter((e) => e.action === "error" && String(e.error).startsWith("EUNSAFE"));

describe("hostile neighbours: the tap writes only what is its own", () => {
  let stub: StubUpstream;
  let dir: string;
  let root: string;
  let outside: string;
  let tap: TestTap | null = null;
  before(async () => {
    stub = await startStub();
  });
  after(async () => await stub.close());
  beforeEach(() => {
    dir = mkdtempSync(`${tmpdir()}/sessiontap-neighbours-`);
    root = `${dir}/mirror`;
    outside = `${dir}/outside`;
    mkdirSync(root, { mode: 0o700 });
    mkdirSync(outside, { mode: 0o777 });
    chmodSync(outside, 0o777);
  });
  afterEach(async () => {
    await tap?.close();
    tap = null;
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs one turn of `session` and one of a fine session; returns the stderr lines. */
  async function turns(session: string | null): Promise<string[]> {
    tap = await startTestTap(stub.url, {}, {}, dir);
    assert.equal((await new Conversation(tap, session).say("a secret pasted into a conversation")).status, 200, "the client is unaffected");
    assert.equal((await new Conversation(tap, "fine").say("hello")).status, 200);
    await tap.engine!.query("mirror.flush", 2000);
    return tap.stderrLines;
  }

  it("another user's 0777 session directory holding their empty 0666 file is never written into", async () => {
    const file = `${root}/victim-sess/2099-01-01T00-00-00.000Z.jsonl`;
    plantDir(`${root}/victim-sess`);
    plantFile(file);
    const lines = await turns("victim-sess");
    assert.equal(statSync(file).size, 0, "nothing was appended to the planted file");
    assert.deepEqual(readdirSync(`${root}/victim-sess`), ["2099-01-01T00-00-00.000Z.jsonl"], "nothing was created beside it");
    assert.ok(
      refusals(root).some((e) => /victim-sess (belongs to another user|is writable by other users)/.test(String(e.error))),
      JSON.stringify(readEvents(root)),
    );
    assert.equal(lines.filter((l) => l.includes("mirror write failed") && l.includes("victim-sess")).length, 1, lines.join("\n"));
    assert.equal(allRecords(`${root}/fine`).length, 2, "other sessions carry on");
  });

  it("the same for `unknown/`, the directory of sessionless traffic", async () => {
    const file = `${root}/unknown/2099-01-01T00-00-00.000Z.jsonl`;
    plantDir(`${root}/unknown`);
    plantFile(file);
    await turns(null);
    assert.equal(statSync(file).size, 0);
    assert.ok(refusals(root).some((e) => String(e.error).includes(`${root}/unknown`)));
  });

  it("a directory of ours left writable by others is refused (no second user needed)", async () => {
    mkdirSync(`${root}/open-sess`);
    chmodSync(`${root}/open-sess`, 0o777);
    writeFileSync(`${root}/open-sess/2099-01-01T00-00-00.000Z.jsonl`, "");
    await turns("open-sess");
    assert.equal(statSync(`${root}/open-sess/2099-01-01T00-00-00.000Z.jsonl`).size, 0);
    assert.ok(refusals(root).some((e) => /open-sess is writable by other users \(mode 777\)/.test(String(e.error))));
  });

  it("a file of another user's (or one open to others) inside our own directory is neither read nor appended to", async () => {
    mkdirSync(`${root}/mine`, { mode: 0o700 });
    const planted = JSON.stringify({ type: "user", uuid: "planted", sessionId: "mine", message: { role: "user", content: "planted" } }) + "\n";
    plantFile(`${root}/mine/2099-01-01T00-00-00.000Z.jsonl`, 0o600, planted);
    mkdirSync(`${root}/mine2`, { mode: 0o700 });
    writeFileSync(`${root}/mine2/2099-01-01T00-00-00.000Z.jsonl`, "", { mode: 0o666 });
    chmodSync(`${root}/mine2/2099-01-01T00-00-00.000Z.jsonl`, 0o666);
    tap = await startTestTap(stub.url, {}, {}, dir);
    assert.equal((await new Conversation(tap, "mine").say("hello")).status, 200);
    assert.equal((await new Conversation(tap, "mine2").say("hello")).status, 200);
    await tap.engine!.query("mirror.flush", 2000);
    assert.equal(readFileSync(`${root}/mine/2099-01-01T00-00-00.000Z.jsonl`, "utf8"), planted);
    assert.equal(statSync(`${root}/mine2/2099-01-01T00-00-00.000Z.jsonl`).size, 0);
    const errors = refusals(root).map((e) => String(e.error));
    assert.ok(errors.some((e) => e.includes("mine/2099-01-01T00-00-00.000Z.jsonl belongs to another user")), errors.join("\n"));
    assert.ok(errors.some((e) => e.includes("mine2/2099-01-01T00-00-00.000Z.jsonl is writable by other users")), errors.join("\n"));
  });

  it("`.staging` and `.locks` that are links are never followed; that are another user's are never used", async () => {
    symlinkSync(outside, `${root}/.staging`);
    await turns("staged");
    assert.deepEqual(readdirSync(outside), [], "nothing was staged outside the root");
    assert.ok(refusals(root).some((e) => String(e.error).includes(".staging is a symbolic link")));
    await tap!.close();
    tap = null;
    rmSync(`${root}/.staging`);

    rmSync(`${root}/.locks`, { recursive: true, force: true });
    symlinkSync(outside, `${root}/.locks`);
    await turns("locked");
    assert.deepEqual(readdirSync(outside), [], "no lock was taken outside the root");
    assert.ok(refusals(root).some((e) => String(e.error).includes(".locks is a symbolic link")));
    await tap!.close();
    tap = null;
    rmSync(`${root}/.locks`);

    plantDir(`${root}/.locks`);
    await turns("locked2");
    assert.deepEqual(readdirSync(`${root}/.locks`), [], "nothing was written into another user's .locks");
    assert.ok(refusals(root).some((e) => /\.locks (belongs to another user|is writable by other users)/.test(String(e.error))));
  });

  it("an events log planted by another user gets no event; the tap says so once", async () => {
    plantFile(`${root}/session-mirror-events.jsonl`);
    const lines = await turns("evented");
    assert.equal(statSync(`${root}/session-mirror-events.jsonl`).size, 0);
    assert.equal(lines.filter((l) => /events log .* not written \(EUNSAFE: .*belongs to another user/.test(l)).length, 1, lines.join("\n"));
    assert.equal(allRecords(`${root}/evented`).length, 2, "the mirror itself carries on");
  });

  it("a spool file that is another user's is not replayed; the start says so", async () => {
    // A real spool: a tap whose session directory is blocked saves its commit there when it stops.
    writeFileSync(`${root}/spooled`, "in the way");
    await turns("spooled");
    await tap!.close();
    tap = null;
    const [saved] = readdirSync(`${root}/.spool/mirror`);
    const host = /^spool-(.+)-\d+-[^-]+\.jsonl$/.exec(saved)?.[1];
    assert.ok(host, saved);
    const file = `spool-${host}-999999999-x.jsonl`; // as if its tap had died (this one still runs)
    renameSync(`${root}/.spool/mirror/${saved}`, `${root}/.spool/mirror/${file}`);
    rmSync(`${root}/spooled`);
    giveAway(`${root}/.spool/mirror/${file}`);
    tap = await startTestTap(stub.url, {}, {}, dir);
    assert.equal(tap.replayed.commits, 0, "nothing replayed from a file that is not the tap's");
    assert.ok(!existsSync(`${root}/spooled`));
    assert.ok(tap.stderrLines.some((l) => /spool at .* could not be read \(EUNSAFE: .*belongs to another user/.test(l)), tap.stderrLines.join("\n"));
  });
});

describe("verify on a planted tree", () => {
  it("reports another user's directory and file as planted and repairs neither", async () => {
    const dir = mkdtempSync(`${tmpdir()}/sessiontap-verify-planted-`);
    try {
      const root = `${dir}/mirror`;
      mkdirSync(`${root}/mine`, { recursive: true, mode: 0o700 });
      const torn = JSON.stringify({ type: "user", uuid: "u1", sessionId: "victim-sess" }) + "\n{torn";
      plantDir(`${root}/victim-sess`, 0o777);
      plantFile(`${root}/victim-sess/2099-01-01T00-00-00.000Z.jsonl`, 0o666, torn);
      plantFile(`${root}/mine/2099-01-01T00-00-00.000Z.jsonl`, 0o666, torn);
      const r = await cli(["verify", "--repair", "--json", "--mirror-dir", root]);
      assert.equal(r.code, 1, r.stderr);
      const problems = (JSON.parse(r.stdout) as { session: string; problems: string[] }[]).flatMap((x) => x.problems);
      assert.ok(problems.some((p) => /^victim-sess belongs to another user \(uid 65534\)/.test(p)), problems.join("\n"));
      assert.ok(problems.some((p) => /^2099-01-01T00-00-00\.000Z\.jsonl belongs to another user/.test(p)), problems.join("\n"));
      for (const file of [`${root}/victim-sess/2099-01-01T00-00-00.000Z.jsonl`, `${root}/mine/2099-01-01T00-00-00.000Z.jsonl`]) {
        assert.equal(readFileSync(file, "utf8"), torn, "not repaired");
        assert.equal(statSync(file).mode & 0o777, 0o666, "its mode not touched");
        assert.ok(!existsSync(`${file}.torn`));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the mirror root must be the user's own and open to nobody else", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(`${tmpdir()}/sessiontap-root-`);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("prepareRoot refuses a root writable by group or others, or another user's, naming the fix", async () => {
    mkdirSync(`${dir}/open`);
    chmodSync(`${dir}/open`, 0o777);
    assert.match(String(await prepareRoot(nodeFs, `${dir}/open`)), new RegExp(`${dir}/open is writable by other users \\(mode 777\\).*chmod 700`));
    mkdirSync(`${dir}/group`);
    chmodSync(`${dir}/group`, 0o770);
    assert.match(String(await prepareRoot(nodeFs, `${dir}/group`)), /is writable by other users \(mode 770\)/);
    mkdirSync(`${dir}/readable`);
    chmodSync(`${dir}/readable`, 0o755);
    assert.equal(await prepareRoot(nodeFs, `${dir}/readable`), null, "readable by others is doctor's warning, not a refusal");
    plantDir(`${dir}/theirs`, 0o700);
    assert.match(String(await prepareRoot(nodeFs, `${dir}/theirs`)), /belongs to another user \(uid 65534\); point the setting at a directory of your own/);
  });

  it("doctor fails the root and the planted entries, saying how to fix each", async () => {
    const root = `${dir}/mirror`;
    mkdirSync(root);
    chmodSync(root, 0o777);
    mkdirSync(`${root}/open-sess`);
    chmodSync(`${root}/open-sess`, 0o777);
    const run = async () =>
      JSON.parse((await cli(["doctor", "--json", "--mirror-dir", root, "--url", "http://127.0.0.1:1"], { CLAUDE_CONFIG_DIR: `${dir}/claude` })).stdout) as {
        check: string;
        status: string;
        detail: string;
      }[];
    const checks = await run();
    const rootCheck = checks.find((c) => c.check === "mirror root" && c.status === "fail");
    assert.match(String(rootCheck?.detail), /writable by other users \(mode 777\).*chmod 700/);
    const tree = checks.find((c) => c.check === "mirror tree");
    assert.equal(tree?.status, "fail");
    assert.match(String(tree?.detail), /open-sess is writable by other users/);
    chmodSync(root, 0o700);
    giveAway(`${root}/open-sess`);
    const again = await run();
    assert.match(String(again.find((c) => c.check === "mirror tree")?.detail), /open-sess belongs to another user \(uid 65534\).*remove them/);
    assert.equal(again.find((c) => c.check === "mirror root")?.status, "ok");
  });
});
