// The compiled executable reads Bedrock's event stream (docs/DESIGN.md "Bedrock's event stream"): AWS's codec
// is compiled into the binary and runs in its mirror engine's Worker. `node scripts/test.mjs binary` builds
// dist/sessiontap and runs this file with SESSIONTAP_BINARY pointing at it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { serveTap } from "../support/child.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { concatBytes, framesOfSse } from "../support/eventstream-build.ts";
import { textReply } from "../support/sse-build.ts";

const BINARY = process.env.SESSIONTAP_BINARY ?? "";
const MS = 30_000;

/** Every record of every mirror file under `dir`. */
function records(dir: string): Record<string, unknown>[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(path).isDirectory()) return records(path);
    if (!name.endsWith(".jsonl") || name === "session-mirror-events.jsonl") return [];
    return readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  });
}

describe("compiled binary on Bedrock", () => {
  let scratch: string;
  let stub: StubUpstream;
  before(async () => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-bedrock-`);
    stub = await startStub();
  });
  after(async () => {
    await stub?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("passes an event stream through byte for byte and mirrors the answer it carries", { timeout: MS }, async () => {
    assert.ok(BINARY !== "" && existsSync(BINARY), "SESSIONTAP_BINARY: run `node scripts/test.mjs binary`");
    const root = `${scratch}/mirror`;
    const bytes = concatBytes(framesOfSse(textReply("Hello from the binary", { id: "msg_bin_1" }).join("")));
    const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", root], { binary: BINARY, env: { HOME: scratch } });
    try {
      stub.enqueue({ kind: "sse", chunks: [bytes.slice(0, 50), bytes.slice(50)], headers: { "content-type": "application/vnd.amazon.eventstream" } });
      const res = await fetch(`${url}/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-claude-code-session-id": "bedrock-binary" },
        body: JSON.stringify({ anthropic_version: "bedrock-2023-05-31", max_tokens: 10, messages: [{ role: "user", content: "hello" }] }),
      });
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(bytes), "the event stream changed on the way through the binary");
    } finally {
      tap.signal("SIGTERM");
    }
    assert.deepEqual(await tap.exit(), { code: 0, signal: null });
    const answer = records(root).find((r) => r.type === "assistant") as { message: { content: unknown[]; stop_reason: string } } | undefined;
    assert.ok(answer, `no assistant record; stderr: ${tap.stderr()}`);
    assert.deepEqual(answer.message.content, [{ type: "text", text: "Hello from the binary" }]);
    assert.equal(answer.message.stop_reason, "end_turn");
  });
});
