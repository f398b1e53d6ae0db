// One request inside the engine: its prepared request, the answer folded, and its one commit handed over once whole or cut (docs/DESIGN.md "Writes").
import type { Answer, CommitJob } from "../protocol/commit-job.ts";
import { isObject, type Json } from "../protocol/json.ts";
import { type AnswerReader, EventStreamReader } from "../protocol/providers/eventstream-reader.ts";
import type { Framing } from "../protocol/providers/recognise.ts";
import { type AssistantMessage, messageFromJson, SseMessageReader } from "../protocol/sse-accumulator.ts";
import type { CutBy, EngineSettings } from "./messages.ts";
import type { Mirror } from "./mirror.ts";
import { classify, readEnvironment, readUserAgent } from "../protocol/classify.ts";
import { readRequest, UnreadableRequest } from "../protocol/lineage.ts";
import { claimsTag, dirName, type IdentityHeaders, resolveIdentity } from "../protocol/session-id.ts";

type State = "waiting" | "ready" | "committed" | "skipped";

export class ResponseFollower {
  private state: State = "waiting";
  private prepared: Prepared | null = null;
  private head: { requestId: string | null } | null = null;
  private reader: AnswerReader | null = null;
  /** A non-streaming answer, decoded as it comes (a view of a batch would keep other streams' bytes alive). */
  private json = "";
  private jsonBytes = 0;
  private readonly decoder = new TextDecoder();
  /** The commit is decided (it may wait for the request): nothing more of the response is read. */
  private settled = false;
  private queued: (() => void)[] = [];

  constructor(
    private readonly mirror: Mirror,
    readonly identity: IdentityHeaders,
    private readonly startedAt: number,
    private readonly pathModel: string | null = null,
  ) {}

  body(prepared: Prepared | Skip): void {
    if (this.state !== "waiting") return;
    if ("reason" in prepared) return this.skip(prepared.reason, prepared.fields);
    this.prepared = prepared;
    this.state = "ready";
    for (const run of this.queued.splice(0)) run();
  }

  /** Only a 2xx answer is followed (an error answer is the client's to see, not a turn to keep). */
  response(status: number, requestId: string | null, framing: Framing, coded = false): void {
    if (this.done) return;
    if (status < 200 || status >= 300) return this.skip(null);
    // A coding fetch did not decode (stacked, or one it does not know) reaches the client as it came: unreadable here.
    if (coded) return this.skip("response body is still content-encoded (a coding the runtime does not decode)");
    this.head = { requestId };
    if (framing === "sse") this.reader = new SseMessageReader(this.mirror.settings.maxMessageBytes);
    else if (framing === "eventstream") this.reader = new EventStreamReader(this.mirror.settings.maxMessageBytes);
  }

  feed(bytes: Uint8Array): void {
    if (this.head === null || this.done || this.settled) return;
    if (this.reader !== null) {
      this.reader.feed(bytes);
      if (this.reader.whole) this.settle("complete");
      else if (this.reader.broken) this.broken(this.reader.broken);
      return;
    }
    this.jsonBytes += bytes.byteLength;
    if (this.jsonBytes > this.mirror.settings.maxMessageBytes) {
      this.json = "";
      this.skip("response body too large to mirror", { bytes: this.jsonBytes });
    } else this.json += this.decoder.decode(bytes, { stream: true });
  }

  end(): void {
    if (this.head === null || this.done || this.settled) return;
    if (this.reader !== null) {
      this.reader.end();
      if (!this.reader.whole && this.reader.broken) return this.broken(this.reader.broken);
      // A stream that ends before the message is whole was cut by the upstream (or its proxy).
      return this.settle(this.reader.whole ? "complete" : "upstream-cut");
    }
    const text = this.json + this.decoder.decode();
    this.json = "";
    // An answer the mirror cannot read is bad input, not a failure of the tap (docs/DESIGN.md "Bad input").
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return this.skip("response body is not JSON", { bytes: this.jsonBytes });
    }
    if (!isObject(parsed) || parsed.type !== "message") return this.skip("response is not a message");
    this.settle("complete", messageFromJson(parsed as Json));
  }

  /** What arrived of a client- or upstream-cut answer is kept, marked; one the relay gave up ("behind") comes with the next request's history. */
  cut(by: CutBy): void {
    if (this.head === null || this.done || this.settled) return;
    if (by === "behind") return this.settle("gave-up");
    this.settle(by === "client" ? "client-cut" : "upstream-cut");
  }

  get done(): boolean {
    return this.state === "committed" || this.state === "skipped";
  }

  get skipped(): boolean {
    return this.state === "skipped";
  }

  /** What came before a broken frame is kept as a cut answer, never as a whole one (docs/DESIGN.md "Bedrock's event stream"). */
  private broken(why: string): void {
    this.mirror.log("broken-frame", { reason: why, kept: this.reader?.acc.hasContent === true ? "partial answer, interrupted" : "the request only" });
    this.settle("upstream-cut");
  }

  /** The commit waits for its request if that has not come yet. */
  private settle(kind: CommitJob["kind"], whole = this.reader?.whole ? this.reader.acc.message(false) : null): void {
    this.settled = true;
    const step = () => this.finish(kind, whole);
    if (this.state === "ready") step();
    else if (this.state === "waiting") this.queued.push(step);
  }

  private skip(reason: string | null, fields?: Skip["fields"]): void {
    this.state = "skipped";
    this.queued = [];
    if (reason !== null) this.mirror.count("skipped", { reason, ...fields });
  }

  private finish(kind: CommitJob["kind"], whole: AssistantMessage | null): void {
    if (this.state !== "ready") return;
    this.state = "committed";
    const p = this.prepared!;
    const acc = this.reader?.acc ?? null;
    const at = new Date(this.mirror.deps.clock()).toISOString();
    if (acc?.truncated) this.mirror.count("truncated", { droppedChars: acc.dropped, keptAtMost: this.mirror.settings.maxMessageBytes });
    if (kind === "gave-up") this.mirror.count("gaveUp", { reason: "the mirror engine fell behind the relay", dir: p.sessionDir, route: p.route });
    // Of a cut answer, what the user saw is kept, marked; the retry's answer is its own record.
    const message = kind === "complete" ? whole : kind !== "gave-up" && acc?.hasContent ? acc.message(true) : null;
    const answer: Answer | null = message === null ? null : { message: this.withModel(message, p.model), requestId: this.head!.requestId, timestamp: at };
    const { model: _model, ...job } = p;
    void this.mirror.commit({ ...job, requestTimestamp: new Date(this.startedAt).toISOString(), answer, kind });
  }

  /** Vertex and Bedrock put the model in the path, not the body. */
  private withModel(message: AssistantMessage, bodyModel: string | null): AssistantMessage {
    if (message.model !== null) return message;
    const model = this.pathModel ?? bodyModel;
    return model === null ? message : { ...message, model };
  }
}

/** The request half of a commit (docs/DESIGN.md "Request side"), and the model the body names (null: none, as on Vertex and Bedrock). */
export type Prepared = Omit<CommitJob, "requestTimestamp" | "answer" | "kind"> & { model: string | null };

export interface Skip {
  reason: string;
  fields?: Record<string, string | number | boolean | null>;
}

/** `version`: the records' when the user agent names no client version. */
export function prepareRequest(
  identity: IdentityHeaders,
  bytes: Uint8Array,
  options: Pick<EngineSettings, "version" | "sideRequests"> & { bindingKey?: string | null },
): Prepared | Skip {
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
  // A regex capture keeps the body text it was cut from alive under Bun (JSC): copies, so a request in flight holds only these.
  const env: ReturnType<typeof readEnvironment> = JSON.parse(JSON.stringify(readEnvironment(rest.system, messages)));
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
