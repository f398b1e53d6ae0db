/**
 * The relay's end of the mirror engine (docs/DESIGN.md "Off the relay path"): response bytes are copied
 * into one staging buffer shared by every stream and sent as one transferred copy per turn of the event
 * loop; every other message flushes the staging buffer first, so the engine reads everything in the order
 * the relay saw it. If the engine's Worker dies, the tap keeps relaying and starts a new one, backing off
 * while it keeps dying (docs/RELIABILITY.md "Failures are loud").
 */
import type { EngineHealth } from "../mirror/health.ts";
import { Alarm } from "../utils/alarm.ts";
import type { BodyCopy, EngineQueries, FromEngine, RequestFacts, ToEngine } from "../mirror/messages.ts";
import type { Replayed } from "../mirror/mirror.ts";
import { credentialTag, type IdentityHeaders, identityHeaders, TOKEN_HEADER, tokenMatches } from "../protocol/session-id.ts";
import { RelayObserver } from "./relay-observer.ts";

/** Where the engine runs: a Worker, or this thread. */
export interface EngineHost {
  /** Sends a message; `transfer` lists buffers the engine takes over (the relay must not touch them again). */
  post(message: ToEngine, transfer: ArrayBuffer[]): void;
  /** Stops the engine for good (after its `stop` query answered). */
  close(): void;
}

/** A running engine: the link the relay uses, and what the engine found at start. */
export interface StartedEngine {
  link: EngineLink;
  replayed: Replayed;
  /** True when the guard runs. */
  guard: boolean;
}

/** What the link tells its owner. */
export interface LinkListener {
  stderr(line: string): void;
  /** Mirror files were written (the viewer's live updates). */
  wrote(paths: string[]): void;
  /** The guard's alerts, whenever they change. */
  alerts(alerts: Extract<FromEngine, { t: "alerts" }>["alerts"]): void;
}

/** A new engine is started at once after a death, then after 1 s, 2 s, … up to this while each dies within a minute. */
const RESTART_MAX_MS = 60_000;

/** Bytes staged before a batch is sent without waiting for the turn to end. */
const MAX_STAGED = 256 * 1024;
/**
 * Response bytes staged or sent to the engine and not yet read by it, past which the relay copies no more:
 * memory between the threads stays bounded however far behind the engine falls, and no client ever waits
 * for it — the mirror gives up on the responses whose bytes it could not take (see docs/DESIGN.md
 * "Off the relay path").
 */
export const MAX_UNREAD = 16 * 1024 * 1024;

/** `bytes` as a view of a whole buffer of its own, which can be transferred: itself when it is one, else a copy. */
function transferable(bytes: Uint8Array): Uint8Array {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  return whole ? bytes : bytes.slice();
}

/** The relay's link to one engine. */
export class EngineLink {
  private nextId = 1;
  private nextQuery = 1;
  private readonly queries = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private staging = new Uint8Array(MAX_STAGED);
  private staged = 0;
  private index: number[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  /** Why the engine stopped, or null while it runs. */
  private why: string | null = null;
  /** Response bytes sent and not yet read by the engine. */
  private unread = 0;
  /** The root's secret credentials are fingerprinted under (null: none is kept). */
  private bindingKey: string | null = null;
  /** The token API traffic must carry to be mirrored (beyond loopback), or null. */
  private apiToken: string | null = null;
  /** API requests not mirrored for want of the token, and when that was last said. */
  private tokenless = 0;
  private tokenlessSaidAt = Number.NEGATIVE_INFINITY;
  /** Engines started in place of a dead one, and how many in a row died within a minute of their start. */
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

  /** `spawn` starts an engine (`first`: the tap's first); `restartable`: a dead one is replaced by a new one. */
  constructor(
    private readonly listener: LinkListener,
    private readonly spawn: (link: EngineLink, first: boolean) => EngineHost,
    private readonly restartable = true,
  ) {
    this.down = new Alarm(Date.now, listener.stderr);
    this.started = new Promise((resolve, reject) => (this.starting = { resolve, reject }));
    this.host = spawn(this, true);
  }

  /** Handles one message from the engine (`from`: the engine it came from; a dead one's are ignored). */
  receive(message: FromEngine, from: EngineHost = this.host): void {
    if (from !== this.host) return;
    switch (message.t) {
      case "ack":
        this.unread -= message.bytes;
        return;
      case "reply": {
        const query = this.queries.get(message.q);
        this.queries.delete(message.q);
        if (message.error !== undefined) query?.reject(new Error(message.error));
        else query?.resolve(message.value);
        return;
      }
      case "stderr":
        return this.listener.stderr(message.line);
      case "wrote":
        return this.listener.wrote(message.paths);
      case "alerts":
        return this.listener.alerts(message.alerts);
      case "failed":
        return this.fail(message.error);
      case "ready":
        if (this.starting !== null) this.starting.resolve({ link: this, replayed: message.replayed, guard: message.guard });
        this.starting = null;
        if (this.why === null) return;
        this.why = null;
        this.restarts++;
        return this.down.ok(() =>
          `sessiontap: mirror engine started again; mirroring resumes (${this.restarts} restart${this.restarts === 1 ? "" : "s"} so far)`
        );
    }
  }

  /**
   * The engine is gone (it failed to start, or died): said once (then at most once a minute while it stays down); what
   * it was sent and had not read is dropped, queries waiting on it are refused, and a new engine is started.
   */
  fail(why: string, from: EngineHost = this.host): void {
    if (from !== this.host || this.why !== null) return;
    if (this.starting !== null) {
      this.host.close();
      this.starting.reject(new Error(`the mirror engine could not start: ${why}`));
      this.starting = null;
      this.why = why;
      return;
    }
    this.why = why;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.staged = 0;
    this.index = [];
    this.unread = 0;
    for (const query of this.queries.values()) query.reject(new Error(`the mirror engine stopped: ${why}`));
    this.queries.clear();
    const again = this.restartable && !this.closing;
    this.down.fail(
      why,
      (first) =>
        `sessiontap: mirror engine ${first ? "stopped" : "still stopped"}: ${why}; the tap keeps relaying ${
          again ? "and starts the engine again (answers it missed are written from each session's next request)" : "but mirrors nothing until it restarts"
        }`,
    );
    if (!again) return;
    this.host.close();
    this.deaths = Date.now() - this.startedAt < 60_000 ? this.deaths + 1 : 1;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      this.startedAt = Date.now();
      if (!this.closing) this.host = this.spawn(this, false);
    }, this.deaths <= 1 ? 0 : Math.min(1000 * 2 ** (this.deaths - 2), RESTART_MAX_MS));
    (this.restartTimer as { unref?: () => void }).unref?.();
  }

  /** Why the engine stopped (said in health), or null while it runs. */
  get stopped(): string | null {
    return this.why;
  }

  /**
   * How requests are told apart (docs/DESIGN.md "Who a session belongs to"): `bindingKey` fingerprints each
   * request's credential for the engine (the credential itself never crosses); `apiToken`, when the tap
   * listens beyond loopback, is what API traffic must carry (TOKEN_HEADER) to be mirrored.
   */
  identify(bindingKey: string | null, apiToken: string | null): void {
    this.bindingKey = bindingKey;
    this.apiToken = apiToken;
  }

  /**
   * Starts following a request with these headers, or null (the engine stopped, or the request lacks the
   * tap's token). `tunnelled`: it came through a proxy tunnel, whose CONNECT the proxy let in only with the token.
   */
  openFor(headers: Headers, at: number, request?: RequestFacts, tunnelled = false): RelayObserver | null {
    if (this.apiToken !== null && !tunnelled && !tokenMatches(headers.get(TOKEN_HEADER), this.apiToken)) {
      this.withoutToken(at);
      return null;
    }
    const credential = this.bindingKey === null ? null : credentialTag(headers, this.bindingKey);
    return this.open({ ...identityHeaders(headers), credential }, at, request);
  }

  /** An API request beyond loopback without the tap's token: relayed, not mirrored; said at once, then at most once a minute. */
  private withoutToken(at: number): void {
    this.tokenless++;
    if (at - this.tokenlessSaidAt < 60_000) return;
    this.tokenlessSaidAt = at;
    this.send({
      t: "log",
      action: "skip",
      fields: { reason: `API traffic without the tap's token (${TOKEN_HEADER}) is relayed, not mirrored`, requests: this.tokenless },
    });
    this.listener.stderr(
      `sessiontap: ${this.tokenless} API request${
        this.tokenless === 1 ? "" : "s"
      } without the tap's token relayed but not mirrored (it listens beyond loopback); ` +
        `to mirror Claude Code's, run it with ANTHROPIC_CUSTOM_HEADERS="${TOKEN_HEADER}: <token>"`,
    );
  }

  /** Starts following one request, or null when the engine has stopped. */
  open(identity: IdentityHeaders, at: number, request?: RequestFacts): RelayObserver | null {
    if (this.stopped !== null) return null;
    const id = this.nextId++;
    this.send({ t: "begin", id, at, identity, request });
    return new RelayObserver(this, id);
  }

  /**
   * A request forwarded without being mirrored, with its body (taken over) for the engine to tell whether it
   * looks like a conversation, or one the tap refused (docs/DESIGN.md "Nothing forwarded unseen").
   */
  unseen(shape: string, reason: string, copy: BodyCopy, refused = false): void {
    if (!("bytes" in copy)) return this.send({ t: "unseen", shape, reason, copy, refused });
    const bytes = transferable(copy.bytes);
    this.send({ t: "unseen", shape, reason, copy: { bytes }, refused }, [bytes.buffer as ArrayBuffer]);
  }

  /** Sends the request's bytes (taken over: the caller must not touch them again), or why there are none. */
  body(id: number, copy: BodyCopy): void {
    if (!("bytes" in copy)) return this.send({ t: "body", id, copy });
    const owned = transferable(copy.bytes);
    this.send({ t: "body", id, copy: { bytes: owned } }, [owned.buffer as ArrayBuffer]);
  }

  /**
   * Copies one chunk of request `id`'s response into the staging buffer; false, copying nothing, when the
   * engine has MAX_UNREAD bytes it has not read yet.
   */
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

  /** Sends a control message after everything staged before it. */
  send(message: ToEngine, transfer: ArrayBuffer[] = []): void {
    if (this.stopped !== null) return;
    if (this.staged > 0) this.flush();
    this.post(message, transfer);
  }

  /** Asks the engine something (health, flush, stop…). */
  query<K extends keyof EngineQueries>(name: K, arg: EngineQueries[K]["arg"]): Promise<EngineQueries[K]["value"]> {
    if (this.stopped !== null) return Promise.reject(new Error(`the mirror engine stopped: ${this.stopped}`));
    const q = this.nextQuery++;
    const answered = new Promise<unknown>((resolve, reject) => this.queries.set(q, { resolve, reject }));
    this.send({ t: "query", q, name, arg });
    return answered as Promise<EngineQueries[K]["value"]>;
  }

  /** Health's engine parts, or null when the engine has stopped (its problem says so). */
  async health(): Promise<EngineHealth | null> {
    if (this.stopped !== null) return null;
    return await this.query("health", null);
  }

  /** Stops the engine: its last flush and spool, then the thread. */
  async stop(boundMs: number): Promise<EngineQueries["stop"]["value"]> {
    this.closing = true;
    if (this.restartTimer !== null) clearTimeout(this.restartTimer);
    try {
      return await this.query("stop", boundMs);
    } finally {
      this.host.close();
    }
  }

  private flush(): void {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.staged === 0) return;
    // A copy of just what was staged goes to the engine; the staging buffer stays here, its pages warm
    // (a fresh 64 KiB buffer per batch cost page faults on every turn: docs/BENCHMARKS.md).
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
      this.fail(`a message could not be sent (${error instanceof Error ? error.message : String(error)})`);
    }
  }
}
