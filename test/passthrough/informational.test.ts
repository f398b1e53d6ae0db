// An upstream may send interim answers nobody asked for — 100 Continue, 103 Early Hints, 102 Processing —
// before its real one (RFC 9110 §15.2). The client must still get the final answer whole, its status and
// headers the upstream's, and the mirror must keep it. The upstream is a raw socket, so the interim lines
// are exactly what an upstream sends.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createServer, type Server, type Socket } from "node:net";
import { textReply } from "../support/sse-build.ts";
import { allRecords, readEvents, startTestTap, type TestTap } from "../support/tap.ts";

/** Interim answers sent before each final one. */
const INTERIM: Record<string, string> = {
  "100": "HTTP/1.1 100 Continue\r\n\r\n",
  "103": "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n",
  "102": "HTTP/1.1 102 Processing\r\n\r\n",
  "100+103": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.js>; rel=preload\r\n\r\n",
};

/** How the final answer is framed. */
type Framing = "sse" | "sse-chunked" | "json";

/**
 * A raw upstream: sends the interim lines of the request's `case` as soon as the request's headers are in
 * (before its body, as a server that says 100 Continue does), then, once the body is in, the answer in the
 * request's `framing`.
 */
function rawUpstream(): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    let buffered = Buffer.alloc(0);
    let interimSent = false;
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buffered.subarray(0, end).toString("latin1");
      const query = new URLSearchParams(/^POST \/v1\/messages\?([^ ]+)/.exec(head)?.[1] ?? "");
      const which = query.get("case") ?? "100";
      const framing = (query.get("framing") ?? "sse") as Framing;
      if (!interimSent) socket.write(INTERIM[which]);
      interimSent = true;
      const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      buffered = Buffer.alloc(0);
      interimSent = false;
      socket.write(finalAnswer(which, framing));
    });
    socket.on("error", () => {});
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        server,
        url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
        close: () => {
          for (const s of sockets) s.destroy();
          return new Promise((r) => server.close(() => r()));
        },
      }))
  );
}

/** The body of the final answer for `which`. */
function answerBody(which: string, framing: Framing): string {
  const id = `msg_${which.replace("+", "_")}_${framing.replace("-", "_")}`;
  if (framing === "json") {
    return JSON.stringify({
      type: "message",
      id,
      role: "assistant",
      model: "m",
      content: [{ type: "text", text: `answered after ${which}` }],
      stop_reason: "end_turn",
    });
  }
  return textReply(`answered after ${which}`, { id }).join("");
}

/** The final answer on the wire. */
function finalAnswer(which: string, framing: Framing): string {
  const body = answerBody(which, framing);
  const type = framing === "json" ? "application/json" : "text/event-stream";
  const head = `HTTP/1.1 200 OK\r\ncontent-type: ${type}\r\nrequest-id: req_interim\r\n`;
  if (framing === "sse-chunked") return `${head}transfer-encoding: chunked\r\n\r\n${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  return `${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

describe("passthrough: interim answers before the final one", () => {
  let up: Awaited<ReturnType<typeof rawUpstream>>;
  let tap: TestTap;
  before(async () => {
    up = await rawUpstream();
    tap = await startTestTap(up.url);
  });
  after(async () => {
    await tap.close();
    await up.close();
  });

  for (const which of Object.keys(INTERIM)) {
    for (const framing of ["sse", "sse-chunked", "json"] as const) {
      it(`an unsolicited ${which} before a 200 (${framing}): the client gets the 200 whole, and the mirror keeps it`, async () => {
        const session = `interim-${which.replace("+", "-")}-${framing}`;
        const res = await fetch(`${tap.url}/v1/messages?case=${encodeURIComponent(which)}&framing=${framing}`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": "sk-test", "x-claude-code-session-id": session },
          body: JSON.stringify({ model: "m", stream: framing !== "json", messages: [{ role: "user", content: `interim ${which}` }] }),
        });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("request-id"), "req_interim");
        assert.equal(await res.text(), answerBody(which, framing));
        await tap.settled();
        const records = allRecords(`${tap.root}/${session}`);
        assert.deepEqual(records.map((r) => r.type), ["user", "assistant"]);
      });
    }
  }

  it("nothing failed in the mirror", () => {
    assert.deepEqual(readEvents(tap.root).filter((e) => e.action === "error" || e.action === "upstream-error"), []);
  });
});
