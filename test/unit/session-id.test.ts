import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { claimsTag, credentialTag, dirName, identityHeaders, judgeBinding, resolveIdentity } from "../../src/protocol/session-id.ts";

describe("resolveIdentity()", () => {
  it("prefers the x-claude-code-session-id header", () => {
    const id = resolveIdentity(identityHeaders(new Headers({ "x-claude-code-session-id": "abc" })), { metadata: { user_id: '{"session_id":"other"}' } });
    assert.equal(id.sessionId, "abc");
  });
  it("reads metadata.user_id as a JSON string", () => {
    assert.equal(resolveIdentity(identityHeaders(new Headers()), { metadata: { user_id: '{"device_id":"d","session_id":"s-1"}' } }).sessionId, "s-1");
  });
  it("reads the legacy …_session_<uuid> form", () => {
    const uuid = "1af7fc5e-8455-4414-9ccd-011d40f70b2a";
    assert.equal(resolveIdentity(identityHeaders(new Headers()), { metadata: { user_id: `user_abc_account__session_${uuid}` } }).sessionId, uuid);
  });
  it("is null (the unknown directory) without any of them", () => {
    assert.equal(resolveIdentity(identityHeaders(new Headers()), { messages: [] }).sessionId, null);
    assert.equal(dirName(null), "unknown");
  });
  it("tells a Claude Code request by its session header or its claude-cli user agent", () => {
    assert.equal(resolveIdentity(identityHeaders(new Headers({ "x-claude-code-session-id": "s" })), {}).claudeCode, true);
    assert.equal(resolveIdentity(identityHeaders(new Headers({ "user-agent": "claude-cli/2.1.328 (external, cli)" })), {}).claudeCode, true);
    assert.equal(resolveIdentity(identityHeaders(new Headers({ "user-agent": "curl/8" })), { metadata: { user_id: '{"session_id":"x"}' } }).claudeCode, false);
  });
  it("reads agent and parent agent ids", () => {
    const id = resolveIdentity(identityHeaders(new Headers({ "x-claude-code-agent-id": "a1", "x-claude-code-parent-agent-id": "a0" })), {});
    assert.deepEqual([id.agentId, id.parentAgentId], ["a1", "a0"]);
  });
});

describe("dirName()", () => {
  it("keeps a safe id as it is", () => {
    assert.equal(dirName("97ca207e-a339-4945-8a67-b4c188d5249f"), "97ca207e-a339-4945-8a67-b4c188d5249f");
  });
  for (const hostile of ["../../etc/passwd", "a/b", "a\u0000b", ".", "..", "x".repeat(300), "", "é"]) {
    it(`maps ${JSON.stringify(hostile.slice(0, 20))} to an inv- name with no separator`, () => {
      const name = dirName(hostile);
      assert.match(name, /^inv-[0-9a-f]{16}$/);
    });
  }
});

describe('judgeBinding(): who may extend a bound session (docs/DESIGN.md "Who a session belongs to")', () => {
  const SECRET = "a secret of the root's";
  const key = (k: string) => credentialTag(new Headers({ "x-api-key": k }), SECRET);
  const bearer = (t: string) => credentialTag(new Headers({ authorization: `Bearer ${t}` }), SECRET);
  const claims = (account: string, device: string) =>
    claimsTag({ metadata: { user_id: JSON.stringify({ account_uuid: account, device_id: device }) } }, SECRET);
  const owner = (credential: string | null, claims: string | null, cwd: string | null) => ({ credential, claims, cwd });

  it("an API key decides: the same key from the same (or an unnamed) directory, never another key or none", () => {
    const bound = owner(key("k1"), null, "/p");
    assert.deepEqual(judgeBinding(bound, owner(key("k1"), null, "/p")), { same: true, next: null });
    assert.deepEqual(judgeBinding(bound, owner(key("k1"), null, null)), { same: true, next: null }, "a title request names no directory");
    assert.deepEqual(judgeBinding(bound, owner(key("k2"), null, "/p")), { same: false, why: "credential" });
    assert.deepEqual(judgeBinding(bound, owner(null, null, "/p")), { same: false, why: "credential" });
    assert.deepEqual(judgeBinding(bound, owner(key("k1"), null, "/elsewhere")), { same: false, why: "cwd" });
  });

  it("a refreshed bearer token of the same account and device is the same owner; one that names only a device is not", () => {
    const account = claims("acct-1", "dev-1");
    assert.deepEqual(judgeBinding(owner(bearer("t1"), account, "/p"), owner(bearer("t2"), account, "/p")), {
      same: true,
      next: owner(bearer("t2"), account, "/p"),
    });
    assert.deepEqual(judgeBinding(owner(bearer("t1"), account, "/p"), owner(bearer("t2"), claims("acct-2", "dev-1"), "/p")), {
      same: false,
      why: "credential",
    });
    const device = claims("", "dev-1");
    assert.deepEqual(judgeBinding(owner(bearer("t1"), device, "/p"), owner(bearer("t2"), device, "/p")), { same: false, why: "credential" });
  });

  it("without a credential, the install that opened the session must be named again; a request naming nothing cannot extend it", () => {
    const device = claims("", "dev-1");
    assert.match(String(device), /^device:[0-9a-f]{32}$/, "Claude Code on Bedrock sends a device id and an empty account");
    const bound = owner(null, device, "/home/owner/proj");
    assert.deepEqual(judgeBinding(bound, owner(null, device, "/home/owner/proj")), { same: true, next: null });
    assert.deepEqual(judgeBinding(bound, owner(null, device, null)), { same: true, next: null }, "its own title request");
    assert.deepEqual(judgeBinding(bound, owner(null, null, null)), { same: false, why: "credential" }, "a stranger naming nothing");
    assert.deepEqual(judgeBinding(bound, owner(null, null, "/home/owner/proj")), { same: false, why: "credential" }, "a stranger who guessed the directory");
    assert.deepEqual(judgeBinding(bound, owner(null, claims("", "dev-2"), "/home/owner/proj")), { same: false, why: "credential" });
    assert.deepEqual(judgeBinding(bound, owner(null, device, "/tmp/x")), { same: false, why: "cwd" });
  });

  it("without a credential or claims, the working directory decides, and a request without one cannot extend the session", () => {
    const bound = owner(null, null, "/home/owner/proj");
    assert.deepEqual(judgeBinding(bound, owner(null, null, "/home/owner/proj")), { same: true, next: null });
    assert.deepEqual(judgeBinding(bound, owner(null, null, null)), { same: false, why: "cwd" });
    assert.deepEqual(judgeBinding(bound, owner(null, null, "/elsewhere")), { same: false, why: "cwd" });
    assert.deepEqual(judgeBinding(bound, owner(null, claims("", "dev-1"), "/home/owner/proj")), {
      same: true,
      next: owner(null, claims("", "dev-1"), "/home/owner/proj"),
    }, "what the session's owner names first is bound too");
  });
});
