import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { dirName, identityHeaders, resolveIdentity } from "../../src/protocol/session-id.ts";

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
