import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { hashMessages, Lineage, LineageReader, messageHash, stableStringify, uuidFrom } from "../../src/protocol/lineage.ts";
import { type EnvelopeBase, planCommit } from "../../src/protocol/commit-job.ts";
import { capturedRequests, capturedTranscript } from "../support/captures.ts";

const base: EnvelopeBase = { sessionId: "s", cwd: null, gitBranch: null, entrypoint: "cli", version: "0.1.0", isSidechain: false, agentId: null };

describe("messageHash()", () => {
  it("ignores cache_control, string vs single text block, signatures, thinking and key order", () => {
    const a = messageHash("user", "hi");
    assert.equal(a, messageHash("user", [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }]));
    assert.equal(a, messageHash("user", [{ text: "hi", type: "text" }]));
    const withThinking = [{ type: "thinking", thinking: "x", signature: "s1" }, { type: "text", text: "ok" }];
    assert.equal(messageHash("assistant", withThinking), messageHash("assistant", [{ type: "text", text: "ok" }]));
    const r1 = [{ type: "tool_result", tool_use_id: "t", content: "out", is_error: false, cache_control: { type: "ephemeral" } }];
    const r2 = [{ tool_use_id: "t", type: "tool_result", content: [{ type: "text", text: "out" }] }];
    assert.equal(messageHash("user", r1), messageHash("user", r2));
  });

  it("keeps roles, block boundaries, tool ids and inputs, error flags and text", () => {
    const h = messageHash("user", "hi");
    assert.notEqual(h, messageHash("assistant", "hi"));
    assert.notEqual(messageHash("user", [{ type: "text", text: "a" }, { type: "text", text: "b" }]), messageHash("user", [{ type: "text", text: "ab" }]));
    const use = (input: unknown, id = "t1") => messageHash("assistant", [{ type: "tool_use", id, name: "Bash", input }]);
    assert.notEqual(use({ c: 1 }), use({ c: 2 }));
    assert.notEqual(use({ c: 1 }), use({ c: 1 }, "t2"));
    assert.notEqual(
      messageHash("user", [{ type: "tool_result", tool_use_id: "t", content: "x", is_error: true }]),
      messageHash("user", [{ type: "tool_result", tool_use_id: "t", content: "x" }]),
    );
  });

  it("hashes a base64 image and its mirrored reference alike", () => {
    const image = { type: "image", source: { type: "base64", media_type: "image/png", data: Buffer.from("png-bytes").toString("base64") } };
    const sha = "f3b0bd3ef8d5ec55be0a3c5f75a2b0e5d8b5b3a8b1c9bf1a0c0d8e1d8cbb0d18";
    assert.notEqual(
      messageHash("user", [image]),
      messageHash("user", [{ type: "image", source: { type: "reference", sha256: sha, media_type: "image/png" } }]),
    );
    const real = createHash("sha256").update("png-bytes").digest("hex");
    assert.equal(messageHash("user", [image]), messageHash("user", [{ type: "image", source: { type: "reference", sha256: real, media_type: "image/png" } }]));
  });

  it("stableStringify sorts keys at every depth", () => {
    assert.equal(stableStringify({ b: 1, a: { d: [1, { f: 1, e: 2 }], c: null } }), '{"a":{"c":null,"d":[1,{"e":2,"f":1}]},"b":1}');
  });

  it("uuidFrom() is deterministic and UUID-shaped", () => {
    assert.equal(uuidFrom("x"), uuidFrom("x"));
    assert.notEqual(uuidFrom("x"), uuidFrom("y"));
    assert.match(uuidFrom("x"), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});

describe("real Claude Code 2.1.328 re-sends", () => {
  for (const capture of ["cc-2.1.328-tool-session", "cc-2.1.328-interactive-compact-rewind"]) {
    it(`${capture}: every assistant message Claude Code re-sends hashes like the one it received`, () => {
      const byId = new Map<string, unknown[]>();
      for (const r of capturedTranscript(capture)) {
        if (r.type === "assistant") byId.set(r.message.id, [...(byId.get(r.message.id) ?? []), ...r.message.content]);
      }
      const received = new Set([...byId.values()].map((content) => messageHash("assistant", content)));
      let resent = 0;
      for (const request of capturedRequests(capture)) {
        for (const m of hashMessages(request.body.messages)) {
          if (m.role !== "assistant") continue;
          resent++;
          assert.ok(received.has(m.hash), `request ${request.n}: re-sent assistant message matches`);
        }
      }
      assert.ok(resent >= 3);
    });
  }

  it("cc-2.1.328-tool-session: each request continues the previous one although a system message turned from blocks into a string", () => {
    const requests = capturedRequests("cc-2.1.328-tool-session");
    const first = requests[0].body.messages[1];
    const second = requests[1].body.messages[1];
    assert.equal(first.role, "system");
    assert.ok(Array.isArray(first.content) && typeof second.content === "string", "the capture shows the switch");
    let previous: string[] = [];
    for (const request of requests) {
      const chains = hashMessages(request.body.messages).map((m) => m.key);
      assert.deepEqual(chains.slice(0, previous.length), previous.slice(0, Math.min(previous.length, chains.length)));
      previous = chains;
    }
  });
});

describe("planCommit()", () => {
  const turn = (n: number) => [{ role: "user", content: `u${n}` }, { role: "assistant", content: [{ type: "text", text: `a${n}` }] }];
  const history = (turns: number) => Array.from({ length: turns }, (_, i) => turn(i + 1)).flat();
  const answer = (text: string) => ({
    message: {
      type: "message",
      role: "assistant" as const,
      id: "m",
      model: "x",
      content: [{ type: "text", text }],
      stop_reason: "end_turn",
      stop_sequence: null,
      stop_details: null,
      usage: null,
    },
    requestId: "r",
    timestamp: "t",
  });

  /** Runs one request against `lineage` and applies what it wrote. */
  function run(lineage: Lineage, messages: unknown[], reply: string) {
    const staged = planCommit(
      { messages: hashMessages(messages), base, answer: answer(reply), requestTimestamp: "t", compaction: false },
      lineage,
      null,
      "s",
      true,
    );
    for (const op of staged.ops) if ("add" in op) lineage.add(op.add);
    return staged.records;
  }

  it("a straight conversation stages one user message and one answer per turn", () => {
    const index = new Lineage();
    for (let n = 1; n <= 5; n++) {
      const records = run(index, [...history(n - 1), { role: "user", content: `u${n}` }], `a${n}`);
      assert.deepEqual(records.map((r) => r.type), ["user", "assistant"]);
      assert.equal(records.some((r) => r.reconstructed), false);
    }
  });

  it("a retry of the same history after nothing was written stages the same records", () => {
    const index = new Lineage();
    run(index, [{ role: "user", content: "u1" }], "a1");
    const messages = [...history(1), { role: "user", content: "u2" }];
    const job = { messages: hashMessages(messages), base, answer: null, requestTimestamp: "t", compaction: false };
    // Planned twice from the same index: the second must see what the first saw.
    const stageOnce = () => planCommit(job, index, null, "s", true);
    const first = stageOnce();
    const again = stageOnce();
    assert.deepEqual(again.records, first.records, "planning is side-effect free");
  });

  it("history the tap never saw is staged once, marked reconstructed up to the last assistant", () => {
    const index = new Lineage();
    const records = run(index, [...history(3), { role: "user", content: "u4" }], "a4");
    assert.deepEqual(records.map((r) => [r.type, Boolean(r.reconstructed)]), [
      ["user", true],
      ["assistant", true],
      ["user", true],
      ["assistant", true],
      ["user", true],
      ["assistant", true],
      ["user", false],
      ["assistant", false],
    ]);
    assert.equal(records[1].requestId, undefined);
    assert.deepEqual(Object.keys(records[1].message as object).sort(), ["content", "role", "type"]);
  });

  it("a rewind branches from the last shared record and rewrites nothing", () => {
    const index = new Lineage();
    const all = [];
    for (let n = 1; n <= 4; n++) all.push(...run(index, [...history(n - 1), { role: "user", content: `u${n}` }], `a${n}`));
    const branch = run(index, [...history(2), { role: "user", content: "u3-edited" }], "b3");
    assert.deepEqual(branch.map((r) => r.type), ["user", "assistant"]);
    const a2 = all.find((r) => (r.message as { content: { text: string }[] }).content[0]?.text === "a2")!;
    assert.equal(branch[0].parentUuid, a2.uuid);
  });

  it("a system message that changes or empties does not fork the history behind it", () => {
    const index = new Lineage();
    const env = { role: "system", content: [{ type: "text", text: "# Environment" }] };
    run(index, [{ role: "user", content: "u1" }, env], "a1");
    const records = run(index, [{ role: "user", content: "u1" }, { role: "system", content: [] }, {
      role: "assistant",
      content: [{ type: "text", text: "a1" }],
    }, { role: "user", content: "u2" }], "a2");
    assert.deepEqual(records.map((r) => r.type), ["user", "assistant"], "only the new turn");
  });

  it("a LineageReader rebuilds the same lineage from the written records", () => {
    const index = new Lineage();
    const written = [];
    for (let n = 1; n <= 3; n++) {
      written.push(...run(index, [...history(n - 1), { role: "user", content: `u${n}` }, { role: "system", content: `env ${n}` }], `a${n}`));
    }
    assert.equal(written.filter((r) => r.type === "system").length, 3);
    const reader = new LineageReader(new Lineage());
    for (const r of JSON.parse(JSON.stringify(written))) reader.apply(r);
    assert.deepEqual(reader.lineage, index);
  });
});
