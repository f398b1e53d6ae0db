// A borrowed session id changes nothing of that session (docs/DESIGN.md "Who a session belongs to"). Any
// client that sent another session's `x-claude-code-session-id` with its own history became that
// session's newest branch, and `restore` then wrote the intruder's conversation (and cwd) as the transcript
// Claude Code resumes. Now a session is bound, by its first request, to a keyed fingerprint of the
// credential that opened it and to its cwd: a request from another credential or directory starts a
// session of its own (said on stderr and in the events log); the owner's own session is never split — the
// same key, or for a bearer token (Claude Code's OAuth, refreshed mid-session) the same account and device.
// Beyond loopback, API traffic is mirrored only when it carries the tap's token. A real tap in-process.
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { Conversation, textsOf } from "../support/client.ts";
import { cli } from "../support/recover.ts";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, readEvents, startTestTap, type TestTap, withTap } from "../support/tap.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";

const SESSION = "b0220000-0000-4000-8000-000000000001";
const env = (cwd: string) => ({ system: `You are Claude Code.\n# Environment\n - Primary working directory: ${cwd}\n` });
const metadata = (account: string, device: string) => ({
  metadata: { user_id: JSON.stringify({ device_id: device, account_uuid: account, session_id: SESSION }) },
});
const users = (records: Record<string, unknown>[]) => records.filter((r) => r.type === "user").map((r) => textsOf(r)[0]);

describe("a borrowed session id", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let dir: string;
  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    dir = tap.root.slice(0, -"/mirror".length);
  });
  const sessions = () => readdirSync(tap.root).filter((n) => !n.startsWith(".") && !n.startsWith("session-mirror-events"));

  it("from another API key: a session of its own, said once on stderr and in the events log; the owner's session untouched", async () => {
    const owner = new Conversation(tap, SESSION, { headers: { "x-api-key": "sk-ant-owner-key" }, ...env("/home/owner/proj") });
    await owner.say("the owner's first prompt");
    await owner.say("the owner's second prompt");
    const intruder = new Conversation(tap, SESSION, { headers: { "x-api-key": "sk-ant-intruder-key" }, ...env("/home/owner/proj") });
    assert.equal((await intruder.say("an intruder's history")).status, 200, "the intruder is answered as before");
    await owner.say("the owner goes on");
    assert.deepEqual(users(allRecords(`${tap.root}/${SESSION}`)), ["the owner's first prompt", "the owner's second prompt", "the owner goes on"]);
    const own = sessions().filter((n) => n.startsWith(`${SESSION}-from-`));
    assert.equal(own.length, 1, `a session of its own: ${sessions()}`);
    const theirs = allRecords(`${tap.root}/${own[0]}`);
    assert.deepEqual(users(theirs), ["an intruder's history"]);
    assert.ok(theirs.every((r) => r.sessionId === own[0]), "its records name their own session");
    const split = readEvents(tap.root).filter((e) => e.action === "session-split");
    assert.deepEqual(split.map((e) => [e.dir, e.as, e.why]), [[SESSION, own[0], "credential"]]);
    assert.equal(tap.stderrLines.filter((l) => /carried the id of session/.test(l)).length, 1, tap.stderrLines.join("\n"));
    const stats = await tap.engine!.query("stats");
    assert.equal(stats.borrowed, 1);
  });

  it("from the same key in another working directory: a session of its own too", async () => {
    const elsewhere = new Conversation(tap, SESSION, { headers: { "x-api-key": "sk-ant-owner-key" }, ...env("/tmp/somewhere/else") });
    await elsewhere.say("the same key, another directory");
    assert.ok(!users(allRecords(`${tap.root}/${SESSION}`)).includes("the same key, another directory"));
    assert.deepEqual(readEvents(tap.root).filter((e) => e.action === "session-split").map((e) => e.why), ["credential", "cwd"]);
  });

  it("restore brings back the owner's conversation and cwd, never the intruder's", async () => {
    const claude = `${dir}/claude`;
    const r = await cli(["restore", SESSION, "--mirror-dir", tap.root], { CLAUDE_CONFIG_DIR: claude });
    assert.equal(r.code, 0, r.stderr);
    const written = readFileSync(`${claude}/projects/${encodeProjectDir("/home/owner/proj")}/${SESSION}.jsonl`, "utf8");
    assert.ok(written.includes("the owner goes on"));
    assert.ok(!written.includes("intruder") && !written.includes("another directory") && !written.includes("/tmp/somewhere/else"));
  });

  it("an OAuth session whose bearer token is refreshed mid-session is never split; another account's token is", async () => {
    const id = "b0220000-0000-4000-8000-000000000002";
    const turn = async (token: string, account: string, text: string, messages: { role: string; content: unknown }[]) => {
      const c = new Conversation(tap, id, {
        headers: { "x-api-key": "", authorization: `Bearer ${token}` },
        ...env("/home/oauth/proj"),
        body: metadata(account, "device-1"),
      });
      c.messages.push(...messages);
      await c.say(text);
      return c.messages;
    };
    let history = await turn("sk-ant-oat01-first-token", "account-1", "before the refresh", []);
    history = await turn("sk-ant-oat01-refreshed-token", "account-1", "after the refresh", history);
    await turn("sk-ant-oat01-someone-elses", "account-2", "another account", []);
    assert.deepEqual(users(allRecords(`${tap.root}/${id}`)), ["before the refresh", "after the refresh"]);
    assert.equal(sessions().filter((n) => n.startsWith(`${id}-from-`)).length, 1);
  });

  it("a session opened without a credential (CLAUDE_CODE_SKIP_BEDROCK_AUTH=1, a gateway that adds its own) is not a stranger's to extend", async () => {
    const id = "b0220000-0000-4000-8000-000000000003";
    // As Claude Code sends it on Bedrock without credentials: no key, a device and no account in metadata.user_id.
    const device = { metadata: { user_id: JSON.stringify({ device_id: "d".repeat(64), account_uuid: "", session_id: id }) } };
    const owner = new Conversation(tap, id, { headers: { "x-api-key": "" }, ...env("/home/owner/bedrock"), body: device });
    await owner.say("the owner's prompt on Bedrock");
    const strangers = [
      new Conversation(tap, id, { headers: { "x-api-key": "" } }),
      new Conversation(tap, id, { headers: { "x-api-key": "" }, ...env("/home/owner/bedrock") }),
    ];
    for (const [i, stranger] of strangers.entries()) assert.equal((await stranger.say(`a stranger's history ${i}`)).status, 200);
    const title = new Conversation(tap, id, { headers: { "x-api-key": "" }, body: device });
    await title.say("the owner's own request that names no directory");
    await owner.say("the owner goes on");
    assert.deepEqual(users(allRecords(`${tap.root}/${id}`)), [
      "the owner's prompt on Bedrock",
      "the owner's own request that names no directory",
      "the owner goes on",
    ]);
    const own = sessions().filter((n) => n.startsWith(`${id}-from-`));
    assert.ok(own.length >= 1, `the strangers' sessions of their own: ${sessions()}`);
    assert.deepEqual(own.flatMap((n) => users(allRecords(`${tap.root}/${n}`))).sort(), ["a stranger's history 0", "a stranger's history 1"]);
    const claude = `${dir}/claude-bedrock`;
    const r = await cli(["restore", id, "--mirror-dir", tap.root], { CLAUDE_CONFIG_DIR: claude });
    assert.equal(r.code, 0, r.stderr);
    const written = readFileSync(`${claude}/projects/${encodeProjectDir("/home/owner/bedrock")}/${id}.jsonl`, "utf8");
    assert.ok(written.includes("the owner goes on") && !written.includes("stranger"), "restore writes the owner's branch");
  });

  it("the binding holds fingerprints only, under a 0600 secret of the root's, and outlives a restart", async () => {
    const key = statSync(`${tap.root}/.binding-key`);
    assert.equal(key.mode & 0o777, 0o600);
    const binding = readFileSync(`${tap.root}/.bindings/${SESSION}.json`, "utf8");
    assert.ok(!/sk-ant|owner-key|oat01/.test(binding), `no credential: ${binding}`);
    assert.match(binding, /"credential":"key:[0-9a-f]{32}"/);
    await using again = await startTestTap(stub.url, {}, {}, dir);
    const intruder = new Conversation(again, SESSION, { headers: { "x-api-key": "sk-ant-intruder-key" }, ...env("/home/owner/proj") });
    await intruder.say("after the restart");
    const owner = new Conversation(again, SESSION, { headers: { "x-api-key": "sk-ant-owner-key" }, ...env("/home/owner/proj") });
    await owner.say("the owner after the restart");
    const mine = users(allRecords(`${again.root}/${SESSION}`));
    assert.ok(mine.includes("the owner after the restart") && !mine.includes("after the restart"), JSON.stringify(mine));
  });
});

describe("beyond loopback, API traffic carries the tap's token to be mirrored", () => {
  const TOKEN = "k3J9-xQp2_vLm7Rw8ZtB4nYc";
  let stub: StubUpstream;
  let tap: TestTap;
  withTap((started) => ({ stub, tap } = started), { env: { SESSIONTAP_HOST: "0.0.0.0", SESSIONTAP_TOKEN: TOKEN } });

  it("without it: relayed, not mirrored, said once; with it (ANTHROPIC_CUSTOM_HEADERS): mirrored, the header never sent upstream", async () => {
    const url = tap.url.replace("0.0.0.0", "127.0.0.1");
    const target = { url, settled: () => tap.settled() };
    assert.equal((await new Conversation(target, "no-token").say("no token here")).status, 200);
    assert.equal((await new Conversation(target, "no-token").say("nor here")).status, 200);
    assert.deepEqual(allRecords(`${tap.root}/no-token`), [], "not mirrored");
    assert.equal(tap.stderrLines.filter((l) => /without the tap's token relayed but not mirrored/.test(l)).length, 1);
    const c = new Conversation(target, "with-token", { headers: { "x-sessiontap-token": TOKEN } });
    assert.equal((await c.say("with the token")).status, 200);
    assert.deepEqual(users(allRecords(`${tap.root}/with-token`)), ["with the token"]);
    assert.equal(stub.requests.at(-1)!.headers["x-sessiontap-token"], undefined, "the tap's token is the tap's: never forwarded");
  });
});
