// Loopback stand-ins for Google Vertex AI and AWS Bedrock serving Claude, built on node:http so they behave
// the same under Bun and Deno. Each speaks its provider's wire format over the conversation logic of the
// Anthropic stub (stub-upstream.ts), which answers behind it: the model is taken from the path and put
// back into the body, the answer is passed on as Vertex sends it (the Messages API's SSE, or JSON) or
// reframed as Bedrock sends it (AWS event-stream frames with correct CRCs, made by AWS's own codec).
// Every request is recorded, so a test can assert which path — streamed or not — the client took. Told to,
// it checks each request's credentials as the provider would: an AWS SigV4 signature verified with the
// test's known keys (sigv4.ts), or a Google bearer token; a request that fails is answered 400 (AWS says
// 403, which Claude Code retries for minutes: a 400 fails the test at once).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { Buffer } from "node:buffer";
import { startStub, type StubUpstream } from "./stub-upstream.ts";
import { concatBytes, exceptionFrame, framesOfSse, withBadCrc, withBadLength } from "./eventstream-build.ts";
import { sigV4Problem } from "./sigv4.ts";

/** One request as the provider stub received it. */
export interface ProviderRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: Uint8Array;
  /** The body bytes the stub answered a streamed Bedrock request with (faults included). */
  answered?: Uint8Array;
  /** What was wrong with its credentials, null when they were right; absent when the stub checks none. */
  authProblem?: string | null;
}

/** The credentials a stub expects: a SigV4 signature for the AWS host it stands for, or one bearer token. */
export type ExpectedAuth = { sigV4For: string } | { bearer: string };

/**
 * A scripted fault for the next streamed Bedrock answer, at frame `at` (0-based): a frame whose checksum is
 * wrong, one whose length is wrong, the stream ended (cleanly, by the HTTP framing) inside that frame, or an
 * exception frame in its place and nothing after it.
 */
export type BedrockFault = { kind: "bad-crc" | "bad-length" | "cut" | "exception"; at: number };

/** A running provider stub on 127.0.0.1. */
export interface ProviderStub {
  url: string;
  requests: ProviderRequest[];
  /** The Anthropic stub answering behind it (its `requests` are the translated ones). */
  inner: StubUpstream;
  /** Faults for the next streamed Bedrock answers, used first in, first out. */
  faults: BedrockFault[];
  close(): Promise<void>;
}

const VERTEX = /\/projects\/[^/]+\/locations\/[^/]+\/publishers\/anthropic\/models\/([^/:]+):(streamRawPredict|rawPredict)$/;
const BEDROCK = /\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/;

/** Asks the Anthropic stub behind for the answer to `body` (as a Messages API request). */
async function ask(inner: StubUpstream, req: ProviderRequest, body: Record<string, unknown>): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  for (const [k, v] of Object.entries(req.headers)) if (k.startsWith("x-claude-code-") || k === "user-agent") headers[k] = v;
  return await fetch(`${inner.url}/v1/messages`, { method: "POST", headers, body: JSON.stringify(body) });
}

/** Writes `bytes` in pieces of at most `size` (so frames straddle chunk boundaries), each handed to the socket before the next. */
async function writeInPieces(res: ServerResponse, bytes: Uint8Array, size: number): Promise<void> {
  for (let at = 0; at < bytes.byteLength && !res.destroyed; at += size) {
    await new Promise<void>((resolve) => res.write(bytes.subarray(at, at + size), () => resolve()));
  }
}

/** Answers one provider request. */
async function serve(stub: ProviderStub, req: ProviderRequest, res: ServerResponse, auth?: ExpectedAuth): Promise<void> {
  if (auth !== undefined) {
    req.authProblem = "sigV4For" in auth
      ? await sigV4Problem(req, auth.sigV4For)
      : req.headers.authorization === `Bearer ${auth.bearer}`
      ? null
      : `not the bearer token: ${JSON.stringify(req.headers.authorization ?? null)}`;
    if (req.authProblem !== null) return json(res, 400, { message: `stub: ${req.authProblem}` });
  }
  const path = req.url.split("?")[0];
  if (/count-tokens/.test(path)) return json(res, 200, { input_tokens: 42 });
  const vertex = VERTEX.exec(path);
  const bedrock = vertex === null ? BEDROCK.exec(path) : null;
  if (vertex === null && bedrock === null) return json(res, 404, { message: `stub: no route for ${req.method} ${path}` });
  const body = JSON.parse(Buffer.from(req.body).toString("utf8")) as Record<string, unknown>;
  if (body.model !== undefined) return json(res, 400, { message: "stub: the model belongs in the path, not the body" });
  const version = body.anthropic_version;
  if (typeof version !== "string") return json(res, 400, { message: "stub: anthropic_version is missing" });
  delete body.anthropic_version;
  delete body.anthropic_beta;
  if (vertex !== null) {
    const answer = await ask(stub.inner, req, { ...body, model: decodeURIComponent(vertex[1]), stream: vertex[2] === "streamRawPredict" });
    res.writeHead(answer.status, {
      "content-type": answer.headers.get("content-type") ?? "application/json",
      "request-id": answer.headers.get("request-id") ?? "",
    });
    res.flushHeaders();
    const reader = answer.body?.getReader();
    for (let next = await reader?.read(); next !== undefined && !next.done; next = await reader!.read()) {
      const chunk = next.value;
      await new Promise<void>((r) => res.write(chunk, () => r()));
    }
    res.end();
    return;
  }
  const streamed = bedrock![2] === "invoke-with-response-stream";
  if (body.stream !== undefined) return json(res, 400, { message: "stub: Bedrock takes no stream field" });
  const answer = await ask(stub.inner, req, { ...body, model: decodeURIComponent(bedrock![1]), stream: streamed });
  const requestId = (answer.headers.get("request-id") ?? "").replace(/^req_/, "amzn_");
  if (!streamed) {
    const text = await answer.text();
    res.writeHead(answer.status, { "content-type": "application/json", "x-amzn-requestid": requestId });
    res.end(text);
    return;
  }
  const frames = framesOfSse(await answer.text());
  const fault = stub.faults.shift();
  let cutAt: number | null = null;
  if (fault !== undefined) {
    const at = Math.min(fault.at, frames.length - 1);
    if (fault.kind === "bad-crc") frames[at] = withBadCrc(frames[at]);
    if (fault.kind === "bad-length") frames[at] = withBadLength(frames[at]);
    if (fault.kind === "exception") frames.splice(at, frames.length - at, exceptionFrame("throttlingException", "Too many requests, please wait."));
    if (fault.kind === "cut") cutAt = frames.slice(0, at).reduce((n, f) => n + f.byteLength, 0) + Math.floor(frames[at].byteLength / 2);
  }
  let bytes = concatBytes(frames);
  if (cutAt !== null) bytes = bytes.slice(0, cutAt);
  req.answered = bytes;
  res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": requestId });
  res.flushHeaders();
  await writeInPieces(res, bytes, 97);
  res.end();
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const data = Buffer.from(JSON.stringify(body), "utf8");
  res.writeHead(status, { "content-type": "application/json", "content-length": String(data.byteLength) });
  res.end(data);
}

/** Starts a provider stub (Vertex and Bedrock paths both) with an Anthropic stub behind it, checking `auth` when given. */
export async function startProviderStub(auth?: ExpectedAuth): Promise<ProviderStub> {
  const inner = await startStub();
  const sockets = new Set<Socket>();
  const stub: ProviderStub = { url: "", requests: [], inner, faults: [], close: async () => {} };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => {
      const rec: ProviderRequest = {
        method: req.method ?? "GET",
        url: req.url ?? "/",
        headers: Object.fromEntries(Object.entries(req.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(", ") : v]]))),
        body: new Uint8Array(Buffer.concat(parts)),
      };
      stub.requests.push(rec);
      serve(stub, rec, res, auth).catch((error) => {
        if (!res.headersSent) json(res, 500, { message: `stub: ${(error as Error).message}` });
        else res.destroy();
      });
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  stub.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  stub.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await inner.close();
  };
  return stub;
}
