// A hostile answer cannot stall everyone (docs/RELIABILITY.md "Trust boundaries"): an upstream (or
// anything posing as one) that answers with a block at index 4294967294 and a flood of unknown deltas
// made the engine run for minutes (a sparse array walked by filter/some, a list copied per delta), and a
// second session's 30 MB answer waited behind it. Through a real tap with its engine in a Worker: both
// clients get every byte, the engine answers health and has written both answers (or given one up,
// counted) once the mirror settles, and the hostile one is kept bounded and marked.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createServer, type Server } from "node:http";
import { messageEnd, messageStart, sseEvent } from "../support/sse-build.ts";
import { allRecords, readEvents, startTestTap, type TestTap } from "../support/tap.ts";

const HOSTILE_INDEX = 4294967294;
const BIG_DELTAS = 30_000;
const BIG_DELTA = "y".repeat(999) + " ";

/** The hostile answer: one ordinary block, one at a huge index, 60,000 unknown deltas. */
function hostileAnswer(): string[] {
  const out = [messageStart("msg_hostile", "m")];
  out.push(sseEvent("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }));
  out.push(sseEvent("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "what was kept" } }));
  out.push(sseEvent("content_block_start", { type: "content_block_start", index: HOSTILE_INDEX, content_block: { type: "text", text: "" } }));
  out.push(sseEvent("content_block_delta", { type: "content_block_delta", index: HOSTILE_INDEX, delta: { type: "text_delta", text: "lost" } }));
  const flood = sseEvent("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "mystery_delta", pad: "p".repeat(40) } });
  out.push(flood.repeat(60_000));
  out.push(sseEvent("content_block_stop", { type: "content_block_stop", index: 0 }));
  out.push(...messageEnd("end_turn"));
  return out;
}

/** An upstream that answers by session: the hostile one, or a 30 MB text answer. */
function upstream(): Promise<{ server: Server; url: string; sentBig: () => number }> {
  let big = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      res.writeHead(200, { "content-type": "text/event-stream", "request-id": `req_${req.headers["x-claude-code-session-id"]}` });
      if (req.headers["x-claude-code-session-id"] === "hostile") {
        for (const e of hostileAnswer()) if (!res.write(e)) await new Promise((r) => res.once("drain", r));
        return res.end();
      }
      const head = messageStart("msg_big", "m") +
        sseEvent("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
      const delta = sseEvent("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: BIG_DELTA } });
      const tail = sseEvent("content_block_stop", { type: "content_block_stop", index: 0 }) + messageEnd("end_turn").join("");
      res.write(head);
      big = Buffer.byteLength(head) + Buffer.byteLength(tail) + BIG_DELTAS * Buffer.byteLength(delta);
      for (let i = 0; i < BIG_DELTAS; i++) if (!res.write(delta)) await new Promise((r) => res.once("drain", r));
      res.end(tail);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, sentBig: () => big }))
  );
}

/** One streamed turn of `session`; resolves with the bytes the client read. */
async function turn(tap: TestTap, session: string): Promise<number> {
  const res = await fetch(`${tap.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "sk-test", "x-claude-code-session-id": session },
    body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: `a prompt of ${session}` }] }),
  });
  assert.equal(res.status, 200);
  return (await res.arrayBuffer()).byteLength;
}

describe("a hostile answer cannot stall the engine or another client", () => {
  let up: Awaited<ReturnType<typeof upstream>>;
  let tap: TestTap;
  before(async () => {
    up = await upstream();
    tap = await startTestTap(up.url);
  });
  after(async () => {
    await tap.close();
    await new Promise((r) => up.server.close(r));
  });

  it("both answers reach their clients whole, the engine keeps answering, and the hostile answer is kept bounded", { timeout: 120_000 }, async () => {
    const hostile = turn(tap, "hostile");
    const bigBytes = await turn(tap, "big-answer");
    await hostile;
    assert.equal(bigBytes, up.sentBig(), "the second client got every byte of its 30 MB answer");
    // Bounded, so a stuck engine fails here rather than at the suite's timeout (before: minutes).
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stuck = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("the engine did not settle within 20 s")), 20_000)));
    await Promise.race([tap.settled(), stuck]).finally(() => clearTimeout(timer));
    const health = await (await fetch(`${tap.url}/_tap/health`)).json() as { problems: string[]; mirror: { gaveUp: number } };
    assert.ok(!health.problems.some((p) => p.includes("did not answer")), `the engine answers: ${health.problems}`);
    const records = allRecords(tap.root);
    const answer = (dir: string) => records.find((r) => r.type === "assistant" && r.sessionId === dir) as { message: Record<string, unknown> } | undefined;
    const kept = answer("hostile");
    assert.ok(kept !== undefined, "the hostile answer is mirrored");
    assert.deepEqual((kept.message.content as { text?: string }[]).map((b) => b.text), ["what was kept"]);
    const marked = kept.message.sessiontap_truncated as { refusedEvents?: number } | undefined;
    assert.ok((marked?.refusedEvents ?? 0) >= 1, `the block at ${HOSTILE_INDEX} is counted: ${JSON.stringify(marked)}`);
    const big = answer("big-answer");
    const gaveUp = readEvents(tap.root).filter((e) => e.action === "give-up" && e.dir === "big-answer").length;
    if (big === undefined) assert.ok(gaveUp === 1 && health.mirror.gaveUp >= 1, "an answer not written was given up, counted and said");
    else assert.equal((big.message.content as { text: string }[])[0].text.length, BIG_DELTAS * BIG_DELTA.length);
    assert.deepEqual(readEvents(tap.root).filter((e) => e.action === "error"), [], "no internal error");
  });
});
