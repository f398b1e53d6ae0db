// The relay's end of the mirror engine (docs/DESIGN.md "Off the relay path"): it only posts, never waits; response bytes go through one
// staging buffer per turn of the event loop, and an engine that dies is started again (RELIABILITY.md "Failures are loud").
import { type EngineHealth, HEALTH_WAIT_MS, MirrorEngine } from "../mirror/engine.ts";
import type { BodyCopy, CutBy, EngineSeams, EngineSettings, EngineStart, FromEngine, RequestFacts, ToEngine } from "../mirror/messages.ts";
import type { Replayed } from "../mirror/mirror.ts";
import { credentialTag, identityHeaders, sameSecret, TOKEN_HEADER } from "../protocol/session-id.ts";
import { responseFraming, responseRequestId } from "../protocol/providers/recognise.ts";
import { Alarm, orAfter } from "../utils/alarm.ts";
import { plural } from "../utils/describe-error.ts";
import { callByName, WorkerCalls } from "../utils/worker-call.ts";
import { nodeFs } from "../storage/fs-adapter.ts";

export type EngineHost = Pick<WorkerCalls<MirrorEngine>, "call" | "post" | "close">;

export interface StartedEngine {
  link: EngineLink;
  replayed: Replayed;
  guard: boolean;
}

export interface LinkListener {
  stderr(line: string): void;
  alerts(alerts: Extract<FromEngine, { t: "alerts" }>["alerts"]): void;
}

const RESTART_MAX_MS = 60_000;
const MAX_STAGED = 256 * 1024;
/** Bytes sent and not yet read past which the relay copies no more and the mirror gives that answer up: memory stays bounded. */
export const MAX_UNREAD = 16 * 1024 * 1024;

function transferable(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer ? bytes : bytes.slice();
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

export class EngineLink {
  private nextId = 1;
  private staging = new Uint8Array(MAX_STAGED);
  private staged = 0;
  private index: number[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  stopped: string | null = null;
  private unread = 0;
  private bindingKey: string | null = null;
  private apiToken: string | null = null;
  private tokenless = 0;
  private tokenlessSaidAt = Number.NEGATIVE_INFINITY;
  restarts = 0;
  private deaths = 0;
  private startedAt = Date.now();
  private restartTimer: ReturnType<typeof setTimeout> | null = null;
  private closing = false;
  private readonly down: Alarm;
  private host: EngineHost;
  /** Settles with the first engine's start: ready, or why it could not start (nothing is started again then). */
  readonly started: Promise<StartedEngine>;
  private starting: { resolve(engine: StartedEngine): void; reject(error: Error): void } | null = null;

  constructor(
    private readonly listener: LinkListener,
    private readonly spawn: (link: EngineLink, first: boolean) => EngineHost,
    private readonly restartable = true,
  ) {
    this.down = new Alarm(Date.now, listener.stderr);
    this.started = new Promise((resolve, reject) => (this.starting = { resolve, reject }));
    this.host = this.boot(spawn(this, true));
  }

  private boot(host: EngineHost): EngineHost {
    host.call("start").then(({ replayed, guard }) => {
      if (host !== this.host) return;
      this.starting?.resolve({ link: this, replayed, guard });
      this.starting = null;
      if (this.stopped === null) return;
      this.stopped = null;
      this.restarts++;
      this.down.ok(() => `sessiontap: mirror engine started again; mirroring resumes (${plural(this.restarts, "restart")} so far)`);
    }, (error) => this.fail(errorText(error), host));
    return host;
  }

  receive(message: FromEngine, from: EngineHost = this.host): void {
    if (from !== this.host) return;
    if (message.t === "ack") this.unread -= message.bytes;
    else if (message.t === "stderr") this.listener.stderr(message.line);
    else this.listener.alerts(message.alerts);
  }

  /** The engine is gone: said once (then at most once a minute), what it had not read dropped, its calls refused, a new one started. */
  fail(why: string, from: EngineHost = this.host): void {
    if (from !== this.host || this.stopped !== null) return;
    this.stopped = why;
    this.host.close(why);
    if (this.starting !== null) {
      this.starting.reject(new Error(`the mirror engine could not start: ${why}`));
      this.starting = null;
      return;
    }
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.staged = 0;
    this.index = [];
    this.unread = 0;
    const again = this.restartable && !this.closing;
    const then = again
      ? "and starts the engine again (answers it missed are written from each session's next request)"
      : "but mirrors nothing until it restarts";
    this.down.fail(why, (first) => `sessiontap: mirror engine ${first ? "stopped" : "still stopped"}: ${why}; the tap keeps relaying ${then}`);
    if (!again) return;
    this.deaths = Date.now() - this.startedAt < 60_000 ? this.deaths + 1 : 1;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      this.startedAt = Date.now();
      if (!this.closing) this.host = this.boot(this.spawn(this, false));
    }, this.deaths <= 1 ? 0 : Math.min(1000 * 2 ** (this.deaths - 2), RESTART_MAX_MS));
    (this.restartTimer as { unref?: () => void }).unref?.();
  }

  identify(bindingKey: string | null, apiToken: string | null): void {
    this.bindingKey = bindingKey;
    this.apiToken = apiToken;
  }

  /** Null: the engine stopped, or the request lacks the tap's token; `tunnelled`: its CONNECT carried the token. */
  openFor(headers: Headers, at: number, request?: RequestFacts, tunnelled = false): RelayObserver | null {
    if (this.apiToken !== null && !tunnelled && !sameSecret(headers.get(TOKEN_HEADER), this.apiToken)) {
      this.withoutToken(at);
      return null;
    }
    if (this.stopped !== null) return null;
    const id = this.nextId++;
    const identity = { ...identityHeaders(headers), credential: this.bindingKey === null ? null : credentialTag(headers, this.bindingKey) };
    this.send({ t: "begin", id, at, identity, request });
    return new RelayObserver(this, id);
  }

  private withoutToken(at: number): void {
    this.tokenless++;
    if (at - this.tokenlessSaidAt < 60_000) return;
    this.tokenlessSaidAt = at;
    const reason = `API traffic without the tap's token (${TOKEN_HEADER}) is relayed, not mirrored`;
    this.send({ t: "log", action: "skip", fields: { reason, requests: this.tokenless } });
    this.listener.stderr(
      `sessiontap: ${plural(this.tokenless, "API request")} without the tap's token relayed but not mirrored (it listens beyond loopback); ` +
        `to mirror Claude Code's, run it with ANTHROPIC_CUSTOM_HEADERS="${TOKEN_HEADER}: <token>"`,
    );
  }

  /** A request forwarded unmirrored: the engine tells whether it looks like a conversation (docs/DESIGN.md "Nothing forwarded unseen"). */
  unseen(shape: string, reason: string, copy: BodyCopy, refused = false): void {
    this.handOver(copy, (copy) => ({ t: "unseen", shape, reason, copy, refused }));
  }

  body(id: number, copy: BodyCopy): void {
    this.handOver(copy, (copy) => ({ t: "body", id, copy }));
  }

  private handOver(copy: BodyCopy, message: (copy: BodyCopy) => ToEngine): void {
    if (!("bytes" in copy)) return this.send(message(copy));
    const bytes = transferable(copy.bytes);
    this.send(message({ bytes }), [bytes.buffer as ArrayBuffer]);
  }

  /** False, copying nothing, when the engine has MAX_UNREAD bytes left to read. */
  copy(id: number, chunk: Uint8Array): boolean {
    if (this.stopped !== null) return true;
    if (this.unread + this.staged > MAX_UNREAD) return false;
    if (this.staged + chunk.byteLength > this.staging.byteLength) this.flush();
    if (chunk.byteLength > this.staging.byteLength) {
      // Larger than the staging buffer (a non-streaming answer's one chunk): a batch of its own.
      this.unread += chunk.byteLength;
      const bytes = chunk.slice();
      this.post({ t: "chunks", bytes, index: [id, chunk.byteLength] }, [bytes.buffer as ArrayBuffer]);
      return true;
    }
    this.staging.set(chunk, this.staged);
    this.staged += chunk.byteLength;
    const last = this.index.length - 2;
    if (last >= 0 && this.index[last] === id) this.index[last + 1] += chunk.byteLength;
    else this.index.push(id, chunk.byteLength);
    if (this.staged >= MAX_STAGED) this.flush();
    else if (this.flushTimer === null) this.flushTimer = setTimeout(() => this.flush(), 0);
    return true;
  }

  send(message: ToEngine, transfer: ArrayBuffer[] = []): void {
    if (this.stopped !== null) return;
    if (this.staged > 0) this.flush();
    this.post(message, transfer);
  }

  query: EngineHost["call"] = (name, ...args) => {
    if (this.stopped !== null) return Promise.reject(new Error(`the mirror engine stopped: ${this.stopped}`)) as never;
    if (this.staged > 0) this.flush();
    return this.host.call(name, ...args);
  };

  /** A stuck engine must not hang health: past HEALTH_WAIT_MS, that is its problem; a refusal means it stopped, which `stopped` says. */
  async health(): Promise<Partial<EngineHealth> & { problems: string[] }> {
    const asked = this.stopped !== null ? null : await orAfter(this.query("health"), HEALTH_WAIT_MS, "late" as const).catch(() => null);
    if (this.stopped !== null) return { problems: [`mirror: the mirror engine stopped (${this.stopped}); nothing is mirrored until it runs again`] };
    if (asked === "late") return { problems: [`mirror: the mirror engine did not answer within ${HEALTH_WAIT_MS} ms`] };
    return asked ?? { problems: [] };
  }

  async stop(boundMs: number) {
    this.closing = true;
    if (this.restartTimer !== null) clearTimeout(this.restartTimer);
    try {
      return await this.query("stop", boundMs);
    } finally {
      this.host.close("the tap stopped");
    }
  }

  private flush(): void {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.staged === 0) return;
    // A copy goes; the staging buffer stays, its pages warm (a fresh one per batch cost page faults: BENCHMARKS.md).
    const bytes = this.staging.slice(0, this.staged);
    const index = this.index;
    this.staged = 0;
    this.index = [];
    this.unread += bytes.byteLength;
    this.post({ t: "chunks", bytes, index }, [bytes.buffer as ArrayBuffer]);
  }

  private post(message: ToEngine, transfer: ArrayBuffer[]): void {
    try {
      this.host.post(message, transfer);
    } catch (error) {
      this.fail(`a message could not be sent (${errorText(error)})`);
    }
  }
}

// Where the engine runs (docs/DESIGN.md "Where the engine runs"): a Worker, or this thread for the launcher's fallback tap only.

/** Rejects when it cannot start; once it ran, a Worker that dies is replaced (a test's seams go to the first only: a port is sent once). */
export function startWorkerEngine(workerUrl: URL | string, settings: EngineSettings, listener: LinkListener, seams?: EngineSeams): Promise<StartedEngine> {
  return new EngineLink(listener, (link, first) => {
    const own = first ? seams : undefined;
    const host: EngineHost = new WorkerCalls<MirrorEngine>(workerUrl, { settings, seams: own } satisfies EngineStart, {
      name: "the mirror engine",
      died: (why) => link.fail(why, host),
      message: (data) => link.receive(data as FromEngine, host),
    }, own === undefined ? [] : [own.port]);
    return host;
  }).started;
}

/** Messages and calls still go through a turn of the event loop, as a Worker's do; its death is the process's. */
export function startThreadEngine(settings: EngineSettings, listener: LinkListener): Promise<StartedEngine> {
  return new EngineLink(listener, (link) => {
    const engine = new MirrorEngine(settings, { fs: nodeFs, clock: Date.now, post: (message) => queueMicrotask(() => link.receive(message)) });
    const call = (name: string, ...args: unknown[]) => Promise.resolve().then(() => callByName(engine, name, args));
    return { post: (message) => queueMicrotask(() => engine.receive(message as ToEngine)), call: call as EngineHost["call"], close: () => {} };
  }, false).started;
}

/** One followed response on the relay, and the one error boundary of its mirror work: it posts, never parses, never throws into the tee. */
export class RelayObserver {
  private following = true;

  constructor(
    private readonly link: EngineLink,
    readonly id: number,
  ) {}

  body(copy: BodyCopy): void {
    this.guarded(() => this.link.body(this.id, copy));
  }

  head(status: number, headers: Headers): boolean {
    return this.guarded(() => {
      // A coding still named in the client's headers is one fetch did not decode.
      const coding = (headers.get("content-encoding") ?? "").trim().toLowerCase();
      const coded = coding !== "" && coding !== "identity";
      this.link.send({ t: "head", id: this.id, status, requestId: responseRequestId(headers), framing: responseFraming(headers.get("content-type")), coded });
      if (status >= 200 && status < 300) return true;
      this.finish({ t: "end", id: this.id });
      return false;
    }) ?? false;
  }

  /** When the engine is too far behind, the mirror gives up on this response instead of copying it. */
  chunk(chunk: Uint8Array): void {
    if (!this.following) return;
    // Run for every chunk: guarded inline, without a closure per chunk.
    try {
      if (!this.link.copy(this.id, chunk)) this.finish({ t: "cut", id: this.id, by: "behind" });
    } catch (error) {
      this.failed(error);
    }
  }

  end(): void {
    if (this.following) this.guarded(() => this.finish({ t: "end", id: this.id }));
  }

  cut(by: CutBy): void {
    if (this.following) this.guarded(() => this.finish({ t: "cut", id: this.id, by }));
  }

  private finish(last: ToEngine): void {
    this.following = false;
    this.link.send(last);
  }

  private guarded<T>(step: () => T): T | undefined {
    try {
      return step();
    } catch (error) {
      this.failed(error);
      return undefined;
    }
  }

  /** Nothing more of this response is copied; the engine hears of it once, and counts, logs and forgets it. */
  private failed(error: unknown): void {
    if (!this.following) return;
    this.following = false;
    this.link.send({ t: "fail", id: this.id, stage: "stream", error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
  }
}
