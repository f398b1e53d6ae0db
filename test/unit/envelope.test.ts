// The envelope never writes null where a reader of Claude Code's files refuses it (docs/DESIGN.md
// "Readable by other tools"): an unknown session id, working directory, branch or request id is left
// out; a known one is written.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { assistantRecord, type EnvelopeBase, userRecord } from "../../src/protocol/commit-job.ts";
import type { AssistantMessage } from "../../src/protocol/sse-accumulator.ts";

const at = { uuid: "00000000-0000-4000-8000-000000000001", parentUuid: null, timestamp: "2026-12-01T00:00:00.000Z" };
const unknown: EnvelopeBase = { sessionId: null, cwd: null, gitBranch: null, entrypoint: "cli", version: "0.1.0", isSidechain: false, agentId: null };
const known: EnvelopeBase = { ...unknown, sessionId: "s-1", cwd: "/p", gitBranch: "main", version: "2.1.332" };
const message: AssistantMessage = {
  type: "message",
  role: "assistant",
  id: "msg_1",
  model: "claude-sonnet-4-5",
  content: [],
  stop_reason: "end_turn",
  stop_sequence: null,
  stop_details: null,
  usage: { input_tokens: 1, output_tokens: 1 },
};

describe("envelope: nothing null a reader refuses", () => {
  it("unknown session, cwd, branch and request id are left out", () => {
    for (const requestId of [null, ""]) {
      const r = assistantRecord(unknown, at, message, requestId);
      for (const key of ["sessionId", "cwd", "gitBranch", "requestId"]) assert.equal(key in r, false, `${key} (requestId ${JSON.stringify(requestId)})`);
      assert.equal(r.version, "0.1.0");
    }
    const u = userRecord(unknown, at, "hi");
    assert.deepEqual(Object.keys(u), ["parentUuid", "isSidechain", "type", "uuid", "timestamp", "version", "userType", "entrypoint", "message", "source"]);
  });

  it("known ones are written, in the envelope's order", () => {
    const r = assistantRecord(known, at, message, "req_1");
    assert.deepEqual(Object.keys(r), [
      "parentUuid",
      "isSidechain",
      "type",
      "uuid",
      "timestamp",
      "sessionId",
      "cwd",
      "version",
      "userType",
      "entrypoint",
      "gitBranch",
      "requestId",
      "message",
      "source",
    ]);
    assert.deepEqual([r.sessionId, r.cwd, r.gitBranch, r.requestId, r.version], ["s-1", "/p", "main", "req_1", "2.1.332"]);
  });
});
