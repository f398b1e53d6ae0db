/**
 * The engine's view of one request (docs/DESIGN.md "Off the relay path"): its prepared request, the
 * response stream folded into the assistant message, and the one commit handed to the mirror when the
 * message is whole or the stream is cut. Its state is one explicit machine, so every message the relay
 * sends has one meaning in every state:
 *
 *     waiting ──body──▶ ready ──complete/end/cut──▶ committed
 *        │                │
 *        └── skipped ◀────┘ (request unreadable, side request off, answer not 2xx or too large)
 *
 * Everything here may throw; the engine contains it (one failure, counted, and the response unmirrored).
 */
import type { CommitJob } from "../protocol/commit-job.ts";
import { isObject, type Json } from "../protocol/json.ts";
import { messageFromJson } from "../protocol/sse-accumulator.ts";
import { SseMessageReader } from "../protocol/sse-reader.ts";
import type { Answer } from "../protocol/staging.ts";
import type { CutBy, Verdict } from "./messages.ts";
import { isSkip, type Prepared, type Skip } from "./request-prep.ts";

/** What a follower reports to. */
export interface FollowerSink {
  commit(job: CommitJob): Promise<void>;
  skip(reason: string, fields?: Record<string, string | number | boolean | null>): void;
  /** An answer kept only in part (past the bound), for the events log. */
  truncated(fields: Record<string, string | number | boolean | null>): void;
  clock(): number;
  /** Largest answer kept (characters of content; a non-streaming body in bytes). */
  maxMessageBytes: number;
}

type State = "waiting" | "ready" | "committed" | "skipped";

/** Follows one request and its response inside the engine. */
export class ResponseFollower {
  private state: State = "waiting";
  private prepared: Prepared | null = null;
  /** The response head, once seen (only a 2xx answer is mirrored: docs/DESIGN.md "The mirror"). */
  private head: { requestId: string | null } | null = null;
  private reader: SseMessageReader | null = null;
  private json: Uint8Array[] = [];
  private jsonBytes = 0;
  /** The commit's write, once handed over. */
  private written: Promise<void> | null = null;
  /** What happened before the request was read (the message completed, the stream ended) waits for it, in order. */
  private queued: (() => void)[] = [];
  /** Resolves when the request has been read or skipped: a verdict asked before then waits for it. */
  private readonly bodySeen: Promise<void>;
  private bodyDone!: () => void;

  constructor(
    private readonly sink: FollowerSink,
    private readonly startedAt: number,
  ) {
    this.bodySeen = new Promise((resolve) => (this.bodyDone = resolve));
  }

  /** The request was read (or could not be): a skipped request is never mirrored. */
  body(prepared: Prepared | Skip): void {
    if (this.state !== "waiting") return;
    if (isSkip(prepared)) return this.skip(prepared.reason, prepared.fields);
    this.prepared = prepared;
    this.state = "ready";
    for (const run of this.queued.splice(0)) run();
    this.bodyDone();
  }

  /** The response head; only a 2xx answer is followed (an error answer is the client's to see, not a turn to keep). */
  response(status: number, requestId: string | null, sse: boolean): void {
    if (this.done) return;
    if (status < 200 || status >= 300) return this.skip(null);
    this.head = { requestId };
    if (sse) this.reader = new SseMessageReader(this.sink.maxMessageBytes);
  }

  /** Response bytes, in order. */
  feed(bytes: Uint8Array): void {
    if (this.head === null || this.done) return;
    if (this.reader !== null) {
      this.reader.feed(bytes);
      if (this.reader.acc.complete) this.later(() => this.finish("complete"));
      return;
    }
    this.jsonBytes += bytes.byteLength;
    if (this.jsonBytes > this.sink.maxMessageBytes) {
      this.json = [];
      this.skip("response body too large to mirror", { bytes: this.jsonBytes });
    } else this.json.push(bytes.slice()); // a copy: a view would keep the whole batch (other streams' bytes) alive
  }

  /** The body ended normally. */
  end(): void {
    if (this.head === null || this.done) return;
    if (this.reader !== null) {
      this.reader.end();
      // A stream that ends before the message is whole was cut by the upstream (or its proxy).
      const whole = this.reader.acc.whole;
      return this.later(() => this.finish(whole ? "complete" : "upstream-cut"));
    }
    const body = new Uint8Array(this.jsonBytes);
    let offset = 0;
    for (const c of this.json) {
      body.set(c, offset);
      offset += c.byteLength;
    }
    this.json = [];
    const parsed = JSON.parse(new TextDecoder().decode(body)) as unknown;
    if (!isObject(parsed) || parsed.type !== "message") return this.skip("response is not a message");
    const message = messageFromJson(parsed as Json);
    this.later(() => this.finish("complete", message));
  }

  /** The body was cut short: by the client leaving, or by the upstream failing (after a whole message, it is whole). */
  cut(by: CutBy): void {
    if (this.head === null || this.done) return;
    const whole = this.reader !== null && this.reader.acc.whole;
    this.later(() => this.finish(whole ? "complete" : by === "client" ? "client-cut" : "upstream-cut"));
  }

  /** The relay's question about the bytes it holds back: see `Verdict`. */
  async verdict(): Promise<Verdict> {
    if (this.written !== null) {
      await this.written;
      return "written";
    }
    if (this.state === "skipped") return "not";
    if (this.reader?.finalEventPending) return "pending";
    if (this.state === "waiting" && this.queued.length > 0) {
      // The message is whole but the request is not read yet: the answer follows once it is.
      await this.bodySeen;
      return this.verdict();
    }
    return "not";
  }

  /** True once nothing more will happen here (committed or skipped). */
  get done(): boolean {
    return this.state === "committed" || this.state === "skipped";
  }

  /** Runs `step` now when the request is read, else once it is. */
  private later(step: () => void): void {
    if (this.state === "ready") step();
    else if (this.state === "waiting") this.queued.push(step);
  }

  /** Nothing of this request is mirrored; `reason` goes to the events log (null: nothing to say). */
  private skip(reason: string | null, fields?: Record<string, string | number | boolean | null>): void {
    this.state = "skipped";
    this.queued = [];
    this.bodyDone();
    if (reason !== null) this.sink.skip(reason, fields);
  }

  /** Hands the one commit of this request to the mirror. */
  private finish(kind: CommitJob["kind"], whole = this.reader?.acc.whole ? this.reader.acc.message(false) : null): void {
    if (this.state !== "ready") return;
    this.state = "committed";
    const p = this.prepared!;
    const acc = this.reader?.acc ?? null;
    const at = new Date(this.sink.clock()).toISOString();
    let answer: Answer | null = null;
    if (acc?.truncated) this.sink.truncated({ droppedChars: acc.dropped, keptAtMost: this.sink.maxMessageBytes });
    if (kind === "complete" && whole !== null) answer = { message: whole, requestId: this.head!.requestId, timestamp: at };
    else if (kind !== "complete" && acc !== null && acc.hasContent) {
      // The user saw this much (the client left, or the upstream broke off): keep it, marked, so their
      // last exchange is not lost (docs/DESIGN.md "Writes"); the retry's answer is its own record.
      answer = { message: acc.message(true), requestId: this.head!.requestId, timestamp: at };
    }
    this.written = this.sink.commit({ ...p, requestTimestamp: new Date(this.startedAt).toISOString(), answer, kind });
  }
}
