import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { scrubContent } from "../../src/protocol/lineage.ts";

describe("scrubContent()", () => {
  it("drops cache_control markers at every depth, and keeps everything else", () => {
    const content = [
      { type: "text", text: "a", cache_control: { type: "ephemeral" } },
      {
        type: "tool_result",
        tool_use_id: "t",
        is_error: false,
        cache_control: { type: "ephemeral" },
        content: [{ type: "text", text: "x", cache_control: { type: "ephemeral" } }],
      },
    ];
    assert.deepEqual(scrubContent(content, true), [
      { type: "text", text: "a" },
      { type: "tool_result", tool_use_id: "t", is_error: false, content: [{ type: "text", text: "x" }] },
    ]);
    assert.equal(content[0].cache_control?.type, "ephemeral", "the input is not changed");
  });

  it("replaces base64 image and document sources, also inside tool results", () => {
    const data = Buffer.from("bytes").toString("base64");
    const out = scrubContent([
      { type: "document", source: { type: "base64", media_type: "application/pdf", data } },
      { type: "tool_result", tool_use_id: "t", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data } }] },
    ], true) as { source?: { type: string; sha256: string }; content?: { source: { type: string } }[] }[];
    assert.equal(out[0].source!.type, "reference");
    assert.match(out[0].source!.sha256, /^[0-9a-f]{64}$/);
    assert.equal(out[1].content![0].source.type, "reference");
    assert.ok(!JSON.stringify(out).includes(data));
  });

  it("drops thinking and redacted thinking only when asked", () => {
    const content = [{ type: "thinking", thinking: "t", signature: "s" }, { type: "redacted_thinking", data: "d" }, { type: "text", text: "x" }];
    assert.equal((scrubContent(content, true) as unknown[]).length, 3);
    assert.deepEqual(scrubContent(content, false), [{ type: "text", text: "x" }]);
  });

  it("keeps a string as it is", () => {
    assert.equal(scrubContent("plain", false), "plain");
  });
});
