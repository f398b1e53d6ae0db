// The engine's view of one request (docs/DESIGN.md "Off the relay path"): its prepared request, the response stream folded into the assistant message, and the
// one commit handed to the mirror as soon as the message is whole (docs/DESIGN.md "Writes") or the stream is cut.
import type { Answer, CommitJob } from "../protocol/commit-job.ts";
import { isObject, type Json } from "../protocol/json.ts";
import { type AnswerReader, EventStreamReader } from "../protocol/providers/eventstream-reader.ts";
import type { Framing } from "../protocol/providers/recognise.ts";
import { type AssistantMessage, messageFromJson, SseMessageReader } from "../protocol/sse-accumulator.ts";
import type { CutBy } from "./messages.ts";
import { classify, readEnvironment, readUserAgent } from "../protocol/classify.ts";
import { readRequest, UnreadableRequest } from "../protocol/lineage.ts";
import { claimsTag, dirName, type IdentityHeaders, resolveIdentity } from "../protocol/session-id.ts";

/** What a follower reports to. */
export interface FollowerSink {
  commit(job: CommitJob): Promise<void>;
  skip(reason: string, fields?: Record<string, string | number | boolean | null>): void;
  /** An answer kept only in part (past the bound), for the events log. */
  truncated(fields: Record<string, string | number | boolean | null>): void;
  /** The relay stopped copying an answer before it was whole (the engine was too far behind): not kept. */
  gaveUp(fields: Record<string, string | number | boolean | null>): void;
  /** An events-log line (a broken frame of an event stream). */
  log(action: string, fields: Record<string, string | number | boolean | null>): void;
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
  private reader: AnswerReader | null = null;
  private json: Uint8Array[] = [];
  private jsonBytes = 0;
  /** The commit is decided (it may wait for the request): nothing more of the response is read. */
  private settled = false;
  /** What happened before the request was read waits for it, in order. */
  private queued: (() => void)[] = [];

  constructor(
    private readonly sink: FollowerSink,
    /** The request's identity headers, for reading its body. */
    readonly identity: IdentityHeaders,
    private readonly startedAt: number,
    /** The model the request's path names (Vertex, Bedrock), the answer's when it names none. */
    private readonly pathModel: string | null = null,
  ) {}

  /** The request was read (or could not be): a skipped request is never mirrored. */
  body(prepared: Prepared | Skip): void {
    if (this.state !== "waiting") return;
    if (isSkip(prepared)) return this.skip(prepared.reason, prepared.fields);
    this.prepared = prepared;
    this.state = "ready";
    for (const run of this.queued.splice(0)) run();
  }

  /** The response head; only a 2xx answer is followed (an error answer is the client's to see, not a turn to keep). */
  response(status: number, requestId: string | null, framing: Framing, coded = false): void {
    if (this.done) return;
    if (status < 200 || status >= 300) return this.skip(null);
    // A coding fetch did not decode (stacked, or one it does not know) reaches the client as it came: unreadable here.
    if (coded) return this.skip("response body is still content-encoded (a coding the runtime does not decode)");
    this.head = { requestId };
    if (framing === "sse") this.reader = new SseMessageReader(this.sink.maxMessageBytes);
    else if (framing === "eventstream") this.reader = new EventStreamReader(this.sink.maxMessageBytes);
  }

  /** Response bytes, in order; a streamed message is committed as soon as it is whole. */
  feed(bytes: Uint8Array): void {
    if (this.head === null || this.done || this.settled) return;
    if (this.reader !== null) {
      this.reader.feed(bytes);
      if (this.reader.whole) this.settle("complete");
      else if (this.reader.broken) this.broken(this.reader.broken);
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
    if (this.head === null || this.done || this.settled) return;
    if (this.reader !== null) {
      this.reader.end();
      if (!this.reader.whole && this.reader.broken) return this.broken(this.reader.broken);
      // A stream that ends before the message is whole was cut by the upstream (or its proxy).
      return this.settle(this.reader.whole ? "complete" : "upstream-cut");
    }
    const body = new Uint8Array(this.jsonBytes);
    let offset = 0;
    for (const c of this.json) {
      body.set(c, offset);
      offset += c.byteLength;
    }
    this.json = [];
    // An answer the mirror cannot read is bad input, not a failure of the tap (docs/DESIGN.md "Bad input").
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder().decode(body));
    } catch {
      return this.skip("response body is not JSON", { bytes: body.byteLength });
    }
    if (!isObject(parsed) || parsed.type !== "message") return this.skip("response is not a message");
    const message = messageFromJson(parsed as Json);
    this.settled = true;
    this.later(() => this.finish("complete", message));
  }

  /**
   * The body was cut short: by the client leaving or the upstream failing (what arrived is kept, marked
   * interrupted), or by the relay, which stopped copying it (the answer is given up: the next request's
   * history brings it, reconstructed).
   */
  cut(by: CutBy): void {
    if (this.head === null || this.done || this.settled) return;
    if (by === "behind") return this.settle("gave-up");
    this.settle(by === "client" ? "client-cut" : "upstream-cut");
  }

  /** True once nothing more will happen here (committed or skipped). */
  get done(): boolean {
    return this.state === "committed" || this.state === "skipped";
  }

  /** True when nothing of this request is mirrored. */
  get skipped(): boolean {
    return this.state === "skipped";
  }

  /**
   * The answer's framing broke (a frame that does not decode, a stream cut inside one): said once, and what
   * came before it is kept as a cut answer, never as a whole one (docs/DESIGN.md "Bedrock's event stream").
   */
  private broken(why: string): void {
    this.sink.log("broken-frame", { reason: why, kept: this.reader?.acc.hasContent === true ? "partial answer, interrupted" : "the request only" });
    this.settle("upstream-cut");
  }

  /** Decides the commit: made now when the request is read, else once it is. */
  private settle(kind: CommitJob["kind"]): void {
    this.settled = true;
    const whole = this.reader?.whole ? this.reader.acc.message(false) : null;
    this.later(() => this.finish(kind, whole));
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
    if (reason !== null) this.sink.skip(reason, fields);
  }

  /** Hands the one commit of this request to the mirror. */
  private finish(kind: CommitJob["kind"], whole: AssistantMessage | null): void {
    if (this.state !== "ready") return;
    this.state = "committed";
    const p = this.prepared!;
    const acc = this.reader?.acc ?? null;
    const at = new Date(this.sink.clock()).toISOString();
    let answer: Answer | null = null;
    if (acc?.truncated) this.sink.truncated({ droppedChars: acc.dropped, keptAtMost: this.sink.maxMessageBytes });
    if (kind === "gave-up") this.sink.gaveUp({ dir: p.sessionDir, route: p.route });
    else if (kind === "complete" && whole !== null) answer = { message: this.withModel(whole, p.model), requestId: this.head!.requestId, timestamp: at };
    else if (kind !== "complete" && acc !== null && acc.hasContent) {
      // The user saw this much (the client left, or the upstream broke off): keep it, marked, so their
      // last exchange is not lost (docs/DESIGN.md "Writes"); the retry's answer is its own record.
      answer = { message: this.withModel(acc.message(true), p.model), requestId: this.head!.requestId, timestamp: at };
    }
    const { model: _model, ...job } = p;
    void this.sink.commit({ ...job, requestTimestamp: new Date(this.startedAt).toISOString(), answer, kind });
  }

  /** The answer with the request's model where it names none: Vertex and Bedrock put the model in the path, not the body. */
  private withModel(message: AssistantMessage, bodyModel: string | null): AssistantMessage {
    if (message.model !== null) return message;
    const model = this.pathModel ?? bodyModel;
    return model === null ? message : { ...message, model };
  }
}

// The request half of a commit (docs/DESIGN.md "Request side"): who sent it, where it goes, its messages with their identities.
/** Fields of a read request that a commit needs, and the model the body names (null: none, as on Vertex and Bedrock). */
export type Prepared = Omit<CommitJob, "requestTimestamp" | "answer" | "kind"> & { model: string | null };

/** Why a request is not mirrored, for the events log. */
export interface Skip {
  reason: string;
  fields?: Record<string, string | number | boolean | null>;
}

/** What preparing needs besides the request. */
export interface PrepOptions {
  /** The tap's own version: the records' `version` when the user agent names no client version. */
  version: string;
  sideRequests: boolean;
  /** The root's secret fingerprints are made under (null: sessions are not bound). */
  bindingKey?: string | null;
}

/** Reads a request body into what its commit needs, or says why it is not mirrored. */
export function prepareRequest(identity: IdentityHeaders, bytes: Uint8Array, options: PrepOptions): Prepared | Skip {
  let read;
  try {
    read = readRequest(bytes);
  } catch (error) {
    if (error instanceof UnreadableRequest) return { reason: error.message, fields: { bytes: bytes.byteLength } };
    throw error;
  }
  const { rest, toolCount, messages } = read;
  const ids = resolveIdentity(identity, rest);
  const { route, compaction } = classify({
    agentId: ids.agentId,
    claudeCode: ids.claudeCode,
    toolCount,
    structuredOutput: isObject(rest.output_config) && rest.output_config.format !== undefined && rest.output_config.format !== null,
    maxTokens: typeof rest.max_tokens === "number" ? rest.max_tokens : null,
    system: rest.system,
    messages,
  });
  if (route === "side" && !options.sideRequests) return { reason: "side request (SESSIONTAP_SIDE_REQUESTS=off)" };
  const env = readEnvironment(rest.system, messages);
  const agent = readUserAgent(identity.userAgent);
  const key = options.bindingKey ?? null;
  return {
    ...(key === null ? {} : { owner: { credential: identity.credential ?? null, claims: claimsTag(rest, key) } }),
    route,
    compaction,
    sessionDir: dirName(ids.sessionId),
    agentDir: ids.agentId === null ? null : dirName(ids.agentId),
    messages,
    model: typeof rest.model === "string" ? rest.model : null,
    base: {
      sessionId: ids.sessionId,
      cwd: env.cwd,
      gitBranch: env.gitBranch,
      entrypoint: env.entrypoint ?? agent.entrypoint ?? "sessiontap",
      version: agent.version ?? options.version,
      isSidechain: route !== "main",
      agentId: ids.agentId,
      parentAgentId: ids.parentAgentId,
    },
  };
}

/** True when preparing said why the request is not mirrored. */
export function isSkip(p: Prepared | Skip): p is Skip {
  return "reason" in p;
}
