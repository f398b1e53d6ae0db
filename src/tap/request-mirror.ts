/**
 * The mirror's view of one request: parses its body while the upstream works, follows the response
 * stream, and hands one commit to the mirror when the response completes or is cut short. It is the
 * tee's second consumer; everything here may throw, the tee contains it.
 */
import { readEnvironment } from "../protocol/envelope.ts";
import { hashMessages } from "../protocol/lineage.ts";
import type { HashCache } from "../protocol/hash-cache.ts";
import { classify } from "../protocol/classify.ts";
import { dirName, resolveIdentity } from "../protocol/session-id.ts";
import { messageFromJson } from "../protocol/sse-accumulator.ts";
import { finalEventStart, SseMessageReader } from "../protocol/sse-reader.ts";
import type { Answer } from "../protocol/staging.ts";
import type { CommitJob } from "../protocol/commit-job.ts";

import type { StreamObserver } from "./tee.ts";
import { isObject, type Json } from "../protocol/json.ts";

/** What the mirror needs to know of a request. */
export interface MirrorRequest {
  method: string;
  pathname: string;
  headers: Headers;
  body: Uint8Array | null;
}

/** The parts of the mirror a request reports to (kept narrow so the two modules do not import each other). */
export interface MirrorSink {
  commit(job: CommitJob): Promise<void>;
  skip(reason: string, fields?: Record<string, string | number | boolean | null>): void;
  readonly options: { version: string; clock: () => number; sideRequests: boolean };
  /** Message hashes remembered across requests. */
  readonly hashes: HashCache;
}

/** Largest non-streaming body the mirror will buffer. */
const MAX_BUFFER = 64 * 1024 * 1024;

/** Fields of a parsed request that a commit needs. */
type Prepared = Omit<CommitJob, "requestTimestamp" | "answer" | "kind">;

/** Follows one request and its response. */
export class RequestMirror implements StreamObserver {
  private prepared: Prepared | null = null;
  private preparing = false;
  private mirrored = false;
  private done = false;
  private sse = false;
  private requestId: string | null = null;
  private readonly reader = new SseMessageReader();
  private readonly acc = this.reader.acc;
  private jsonChunks: Uint8Array[] = [];
  private jsonBytes = 0;
  private finalEventAt = 0;

  constructor(
    private readonly sink: MirrorSink,
    private readonly request: MirrorRequest,
    private readonly startedAt: number,
  ) {}

  /** Parses the request body, once; called when the upstream request is under way. */
  prepare(): void {
    if (this.preparing) return;
    this.preparing = true;
    const body = this.request.body;
    if (body === null) return this.sink.skip("no request body");
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
    } catch (error) {
      const reason = error instanceof TypeError ? "request body is not UTF-8" : "request body is not JSON";
      return this.sink.skip(reason, { bytes: body.byteLength });
    }
    if (!isObject(parsed) || !Array.isArray(parsed.messages)) return this.sink.skip("request has no messages array");
    const identity = resolveIdentity(this.request.headers, parsed);
    const { route, compaction } = classify({
      agentId: identity.agentId,
      claudeCode: identity.claudeCode,
      toolCount: Array.isArray(parsed.tools) ? parsed.tools.length : 0,
      structuredOutput: isObject(parsed.output_config) && parsed.output_config.format !== undefined && parsed.output_config.format !== null,
      system: parsed.system,
      messages: parsed.messages,
    });
    if (route === "side" && !this.sink.options.sideRequests) return this.sink.skip("side request (SESSIONTAP_SIDE_REQUESTS=off)");
    const sessionDir = dirName(identity.sessionId);
    const agentDir = identity.agentId === null ? null : dirName(identity.agentId);
    const env = readEnvironment(parsed.system, parsed.messages);
    const { version } = this.sink.options;
    this.prepared = {
      route,
      compaction,
      sessionDir,
      agentDir,
      messages: hashMessages(parsed.messages, this.sink.hashes),
      base: {
        sessionId: identity.sessionId, cwd: env.cwd, gitBranch: env.gitBranch,
        entrypoint: env.entrypoint ?? "sessiontap", version: `sessiontap/${version}`,
        isSidechain: route !== "main", agentId: identity.agentId, parentAgentId: identity.parentAgentId,
      },
    };
  }

  /** Sees the response head: only a 2xx answer is mirrored (docs/DESIGN.md "The mirror"). */
  response(status: number, headers: Headers): void {
    if (this.prepared === null || status < 200 || status >= 300) return;
    this.mirrored = true;
    this.requestId = headers.get("request-id");
    this.sse = (headers.get("content-type") ?? "").toLowerCase().includes("text/event-stream");
  }

  /** Sees one chunk of the body; returns the write's promise when this chunk completed the message. */
  feed(chunk: Uint8Array): Promise<void> | undefined {
    if (!this.mirrored || this.done) return undefined;
    if (!this.sse) {
      this.jsonBytes += chunk.byteLength;
      if (this.jsonBytes > MAX_BUFFER) {
        this.done = true;
        this.jsonChunks = [];
        this.sink.skip("response body too large to mirror", { bytes: this.jsonBytes });
      } else {
        this.jsonChunks.push(chunk);
      }
      return undefined;
    }
    this.reader.feed(chunk);
    if (!this.acc.complete) return undefined;
    this.finalEventAt = finalEventStart(chunk);
    return this.finish("complete");
  }

  /** The body ended normally. */
  end(): Promise<void> | undefined {
    if (!this.mirrored || this.done) return undefined;
    if (this.sse) {
      this.reader.end();
      // A stream that ends before the message is whole was cut by the upstream (or its proxy).
      return this.finish(this.acc.whole ? "complete" : "upstream-cut");
    }
    const body = new Uint8Array(this.jsonBytes);
    let offset = 0;
    for (const c of this.jsonChunks) {
      body.set(c, offset);
      offset += c.byteLength;
    }
    this.jsonChunks = [];
    const parsed = JSON.parse(new TextDecoder().decode(body)) as unknown;
    if (!isObject(parsed) || parsed.type !== "message") {
      this.done = true;
      this.sink.skip("response is not a message");
      return undefined;
    }
    return this.finish("complete", messageFromJson(parsed as Json));
  }

  /** Where the final event (message_stop) begins in the chunk that completed the message. */
  heldFrom(): number {
    return this.finalEventAt;
  }

  /** A non-streaming answer is only complete at its end: its last chunk waits for the write. */
  holdsLastChunk(): boolean {
    return this.mirrored && !this.done && !this.sse;
  }

  /** The body was cut short: by the client leaving, or by the upstream failing (after a whole message, it is whole). */
  abort(by: "client" | "upstream"): void {
    if (!this.mirrored || this.done) return;
    void this.finish(this.sse && this.acc.whole ? "complete" : by === "client" ? "client-cut" : "upstream-cut");
  }

  /** Hands the one commit of this request to the mirror. */
  private finish(kind: CommitJob["kind"], message = this.acc.whole ? this.acc.message(false) : null): Promise<void> {
    this.done = true;
    const p = this.prepared!;
    const clock = this.sink.options.clock;
    let answer: Answer | null = null;
    if (kind === "complete" && message !== null) {
      answer = { message, requestId: this.requestId, timestamp: new Date(clock()).toISOString() };
    } else if (kind !== "complete" && this.acc.hasContent) {
      // The user saw this much (the client left, or the upstream broke off): keep it, marked, so their
      // last exchange is not lost (docs/DESIGN.md "Writes"); the retry's answer is its own record.
      answer = { message: this.acc.message(true), requestId: this.requestId, timestamp: new Date(clock()).toISOString() };
    }
    return this.sink.commit({ ...p, requestTimestamp: new Date(this.startedAt).toISOString(), answer, kind });
  }
}
