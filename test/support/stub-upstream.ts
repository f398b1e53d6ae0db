// Loopback stand-in for the Anthropic Messages API, built on node:http so it behaves the same
// under Bun and Deno. Tests script replies (enqueue / setDefault); every request is recorded.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { Socket } from "node:net";
import { readdirSync, readFileSync } from "node:fs";
import { Buffer } from "node:buffer";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { errorJson, messageJson, sseEvent, textReply, toolUseReply } from "./sse-build.ts";

export { sseEvent, textReply, toolUseReply };

/** One request as the stub received it; `aborted`/`closed` report how its response ended. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Uint8Array;
  aborted: boolean;
  /** Resolves when the server saw the request's connection/response close (finished or aborted). */
  closed: Promise<void>;
}

/** A scripted reply the stub sends for one request (variants documented inline). */
export type Reply =
  | { kind: "sse"; chunks: (string | Uint8Array)[]; status?: number; headers?: Record<string, string>; delayMs?: number[]; gzip?: boolean }
  | { kind: "json"; status: number; body: unknown; headers?: Record<string, string>; gzip?: boolean }
  | { kind: "raw"; status: number; body: string | Uint8Array; headers?: Record<string, string> }
  /** 200 SSE headers + these chunks, then the socket is destroyed (connection reset mid-stream). */
  | { kind: "reset-after"; chunks: (string | Uint8Array)[] }
  /** These chunks, then nothing more and no end (until the client aborts or stub.close()). */
  | { kind: "stall-after"; chunks: (string | Uint8Array)[] }
  /** Claude-Code-like replies: RUNTOOL → Bash tool_use, RUNAGENT → Agent tool_use (a subagent whose task is
   * "SUBTASK: say hello"), a request for a JSON `title` (Claude Code's session-title request) → {"title":"Stub title <n>"},
   * otherwise "Done (reply <n>)."; count_tokens; 404.
   * With `summaries: true`, a summarising request (last user text starts "CRITICAL: Respond with TEXT ONLY",
   * as Claude Code 2.1.328's /compact sends) gets "<analysis>…</analysis><summary>Stub summary (reply <n>).</summary>".
   * A request for a structured answer with a `title` (Claude Code's session title) gets `{"title":"Stub title (reply <n>)"}`. */
  | { kind: "conversation"; summaries?: boolean }
  /** What `reply` makes of this request (a model that acts on what it was sent). */
  | { kind: "fn"; reply: (request: RecordedRequest, n: number) => Reply };

/** A running stub upstream on 127.0.0.1; `await using` closes it when the block ends. */
export interface StubUpstream extends AsyncDisposable {
  url: string; // "http://127.0.0.1:PORT"
  port: number;
  requests: RecordedRequest[]; // every request received, in order
  enqueue(...replies: Reply[]): void; // used FIFO; when the queue is empty the default reply is used
  setDefault(reply: Reply): void; // initially { kind: "conversation" }
  nextRequest(): Promise<RecordedRequest>; // next request not yet taken by nextRequest (waits if none)
  close(): Promise<void>; // destroys open sockets/responses, cuts pacing timers short, closes the server (once)
}

const FIXTURE_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "sse");

/** Reads test/fixtures/sse/<name>.sse as text. */
export function loadFixture(name: string): string {
  return readFileSync(join(FIXTURE_DIR, `${name}.sse`), "utf8");
}

/** Names (without .sse) of every recording in test/fixtures/sse, sorted. */
export function fixtureNames(): string[] {
  return readdirSync(FIXTURE_DIR).filter((f) => f.endsWith(".sse")).map((f) => f.slice(0, -4)).sort();
}

const sseHeaders = (n: number) => ({ "content-type": "text/event-stream", "cache-control": "no-cache", "request-id": `req_stub_${n}` });
const toBytes = (c: string | Uint8Array) => (typeof c === "string" ? Buffer.from(c, "utf8") : Buffer.from(c));
/** Per-stub state the reply writers need: live sockets and a sleep that close() cuts short. */
type Ctx = { sockets: Set<Socket>; sleep(ms: number): Promise<void> };

/** Writes one chunk and resolves once it has been handed to the socket (or the response is gone). */
function write(res: ServerResponse, chunk: string | Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed) return resolve();
    res.write(toBytes(chunk), () => resolve());
  });
}

function sendJson(res: ServerResponse, n: number, status: number, body: unknown, headers: Record<string, string> = {}, gzip = false): void {
  let data: Uint8Array = Buffer.from(JSON.stringify(body), "utf8");
  const h: Record<string, string> = { "content-type": "application/json", "request-id": `req_stub_${n}`, ...headers };
  if (gzip) {
    data = gzipSync(data);
    h["content-encoding"] = "gzip";
  }
  h["content-length"] = String(data.byteLength);
  res.writeHead(status, h);
  res.end(data);
}

/** The conversation-mode reply for request number `n`. */
function conversation(rec: RecordedRequest, n: number, summaries = false): Reply {
  const path = rec.url.split("?")[0];
  if (path === "/v1/messages/count_tokens") return { kind: "json", status: 200, body: { input_tokens: 42 } };
  if (path !== "/v1/messages") return { kind: "json", status: 404, body: errorJson("not_found_error", `stub: no route for ${rec.method} ${path}`) };
  let req: {
    model?: string;
    stream?: boolean;
    messages?: { role: string; content: unknown }[];
    output_config?: { format?: { schema?: { properties?: Record<string, unknown> } } };
  };
  try {
    req = JSON.parse(Buffer.from(rec.body).toString("utf8"));
  } catch {
    return { kind: "json", status: 400, body: errorJson("invalid_request_error", "stub: request body is not JSON") };
  }
  const model = req.model ?? "claude-stub";
  // Claude Code 2.x puts role:"system" entries inside `messages` (after the user turn); skip them.
  const last = (req.messages ?? []).filter((m) => m.role !== "system").at(-1);
  const blocks: { type?: string; text?: string }[] = typeof last?.content === "string"
    ? [{ type: "text", text: last.content }]
    : Array.isArray(last?.content)
    ? last.content
    : [];
  const lastText = blocks.filter((b) => b?.type === "text" && typeof b.text === "string").at(-1)?.text ?? "";
  const summarising = summaries && last?.role === "user" && lastText.startsWith("CRITICAL: Respond with TEXT ONLY");
  const asks = (word: string) =>
    !summarising && last?.role === "user" && !blocks.some((b) => b?.type === "tool_result") &&
    blocks.some((b) => b?.type === "text" && typeof b.text === "string" && b.text.includes(word));
  const titling = req.output_config?.format?.schema?.properties?.title !== undefined;
  const tool = titling
    ? null
    : asks("RUNTOOL")
    ? { name: "Bash", input: { command: "echo hi-from-tool", description: "Say hi" } as Record<string, unknown> }
    : asks("RUNAGENT")
    ? { name: "Agent", input: { description: "Stub subagent", prompt: "SUBTASK: say hello", subagent_type: "general-purpose" } as Record<string, unknown> }
    : null;
  const id = `msg_stub_${n}`;
  const preText = "I'll run it.";
  const text = summarising
    ? `<analysis>Stub analysis.</analysis>\n<summary>Stub summary (reply ${n}).</summary>`
    : titling
    ? JSON.stringify({ title: `Stub title (reply ${n})` })
    : `Done (reply ${n}).`;
  if (req.stream === true) {
    const chunks = tool !== null ? toolUseReply(tool.name, tool.input, { id, toolUseId: `toolu_stub_${n}`, preText, model }) : textReply(text, { id, model });
    return { kind: "sse", chunks };
  }
  const content = tool !== null
    ? [{ type: "text", text: preText }, { type: "tool_use", id: `toolu_stub_${n}`, name: tool.name, input: tool.input }]
    : [{ type: "text", text }];
  return { kind: "json", status: 200, body: messageJson(id, model, content, tool !== null ? "tool_use" : "end_turn") };
}

async function send(res: ServerResponse, rec: RecordedRequest, n: number, reply: Reply, ctx: Ctx): Promise<void> {
  switch (reply.kind) {
    case "conversation":
      return send(res, rec, n, conversation(rec, n, reply.summaries), ctx);
    case "fn":
      return send(res, rec, n, reply.reply(rec, n), ctx);
    case "json":
      return sendJson(res, n, reply.status, reply.body, reply.headers, reply.gzip);
    case "raw":
      res.writeHead(reply.status, reply.headers ?? {});
      res.end(toBytes(reply.body));
      return;
    case "sse": {
      const h: Record<string, string> = { ...sseHeaders(n), ...reply.headers };
      let chunks = reply.chunks;
      if (reply.gzip) {
        chunks = [gzipSync(Buffer.concat(chunks.map(toBytes)))];
        h["content-encoding"] = "gzip";
      }
      res.writeHead(reply.status ?? 200, h);
      res.flushHeaders();
      for (let i = 0; i < chunks.length; i++) {
        const d = reply.delayMs?.[i];
        if (d) await ctx.sleep(d);
        if (res.destroyed) return;
        await write(res, chunks[i]);
      }
      res.end();
      return;
    }
    case "reset-after":
    case "stall-after": {
      res.writeHead(200, sseHeaders(n));
      res.flushHeaders();
      for (const c of reply.chunks) await write(res, c);
      if (reply.kind === "reset-after") {
        // Bun's fetch drops body bytes that arrive together with the reset; give them time to be read.
        await ctx.sleep(20);
        const sock = res.socket as Socket | null;
        sock?.destroy();
        res.destroy();
        if (sock) ctx.sockets.delete(sock);
      }
      return;
    }
  }
}

/**
 * Starts a stub upstream listening on 127.0.0.1, on `port` (default: one the OS assigns); with `tls` (a
 * certificate for 127.0.0.1 and its key) it speaks HTTPS.
 */
export function startStub(port = 0, tls?: { certPem: string; keyPem: string }): Promise<StubUpstream> {
  const requests: RecordedRequest[] = [];
  const queue: Reply[] = [];
  let fallback: Reply = { kind: "conversation" };
  let taken = 0;
  let count = 0;
  const waiters: { resolve: (r: RecordedRequest) => void; reject: (e: Error) => void }[] = [];
  const sockets = new Set<Socket>();
  const open = new Set<ServerResponse>();
  const timers = new Map<ReturnType<typeof setTimeout>, () => void>();
  const ctx: Ctx = {
    sockets,
    sleep: (ms) =>
      new Promise<void>((resolve) => {
        const t = setTimeout(() => (timers.delete(t), resolve()), ms);
        timers.set(t, resolve);
      }),
  };

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const n = ++count;
    let markClosed!: () => void;
    const rec: RecordedRequest = {
      method: req.method ?? "GET",
      url: req.url ?? "/",
      headers: Object.fromEntries(
        Object.entries(req.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(", ") : v]])),
      ),
      body: new Uint8Array(0),
      aborted: false,
      closed: new Promise<void>((r) => (markClosed = r)),
    };
    open.add(res);
    res.on("close", () => {
      open.delete(res);
      if (!res.writableFinished) rec.aborted = true;
      markClosed();
    });
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("error", () => {});
    req.on("end", () => {
      rec.body = new Uint8Array(Buffer.concat(parts));
      requests.push(rec);
      const w = waiters.shift();
      if (w) {
        taken++;
        w.resolve(rec);
      }
      const reply = queue.length > 0 ? queue.shift()! : fallback;
      send(res, rec, n, reply, ctx).catch(() => res.destroy());
    });
  };
  const server = tls === undefined ? createServer(handler) : createTlsServer({ cert: tls.certPem, key: tls.keyPem }, handler);
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("clientError", (_e: Error, s: Socket) => s.destroy());

  let closing: Promise<void> | null = null;
  const close = () => (closing ??= new Promise<void>((res) => {
    for (const w of waiters.splice(0)) w.reject(new Error("stub upstream closed"));
    for (const r of open) r.destroy();
    for (const [t, wake] of timers) (clearTimeout(t), timers.delete(t), wake());
    for (const s of sockets) s.destroy();
    (server as { closeAllConnections?: () => void }).closeAllConnections?.();
    server.close(() => res());
  }));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      resolve({
        url: `${tls === undefined ? "http" : "https"}://127.0.0.1:${port}`,
        port,
        requests,
        enqueue: (...replies) => void queue.push(...replies),
        setDefault: (reply) => void (fallback = reply),
        nextRequest: () =>
          taken < requests.length ? Promise.resolve(requests[taken++]) : new Promise((res, rej) => waiters.push({ resolve: res, reject: rej })),
        close,
        [Symbol.asyncDispose]: close,
      });
    });
  });
}
