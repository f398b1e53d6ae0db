/**
 * The relay's side of one mirrored response (docs/DESIGN.md "Off the relay path", "Writes"): it copies
 * each chunk to the engine and finds the bytes that may be the final event, which the tee then holds
 * until the engine says the message is written (bounded). It never parses. Its state is one explicit
 * machine, and it is the one error boundary of the relay's mirror work: nothing it does can throw into
 * the tee.
 *
 *     following ──(engine: ignore, or it stopped, or a failure here)──▶ ignored
 *        │
 *        └──(end, cut)──▶ done
 */
import type { BodyCopy, CutBy, ToEngine, Verdict } from "../mirror/messages.ts";
import { FinalEventWatch } from "./final-event-watch.ts";

/** What an observer needs of the engine's link (engine-link.ts). */
export interface ObserverLink {
  body(id: number, copy: BodyCopy): void;
  copy(id: number, chunk: Uint8Array): void;
  send(message: ToEngine): void;
  ask(id: number, end?: boolean): Promise<Verdict>;
  /** Null while the engine keeps up; else resolves once it has caught up. */
  behind(): Promise<void> | null;
  /** The relay is done with this observer. */
  done(id: number): void;
}

/** Bytes to hold back from a chunk, and the engine's verdict on them. */
export interface Hold {
  /** Where in the chunk the held bytes begin. */
  from: number;
  verdict: Promise<Verdict>;
}

type State = "following" | "ignored" | "done";

/** Follows one response on the relay. */
export class RelayObserver {
  private state: State = "following";
  private sse = false;
  private readonly watch = new FinalEventWatch();

  constructor(
    private readonly link: ObserverLink,
    readonly id: number,
  ) {}

  /** The request's bytes (the engine takes them over), or why the mirror does not get them. */
  body(copy: BodyCopy): void {
    this.guarded(() => this.link.body(this.id, copy));
  }

  /** The response head. Returns false when the response is not followed (then the relay forgets this observer). */
  head(status: number, headers: Headers): boolean {
    return this.guarded(() => {
      this.sse = (headers.get("content-type") ?? "").toLowerCase().includes("text/event-stream");
      this.link.send({ t: "head", id: this.id, status, requestId: headers.get("request-id"), sse: this.sse });
      if (status >= 200 && status < 300) return true;
      this.finish(null); // only a 2xx answer is mirrored (docs/DESIGN.md "The mirror")
      return false;
    }) ?? false;
  }

  /** One chunk: copied to the engine; returns what to hold back when it may hold the final event. */
  chunk(chunk: Uint8Array): Hold | null {
    if (this.state !== "following") return null;
    // The one step run for every chunk: guarded inline, without a closure per chunk.
    try {
      this.link.copy(this.id, chunk);
      if (!this.sse) return null;
      const from = this.watch.holdFrom(chunk);
      return from < 0 ? null : { from, verdict: this.link.ask(this.id) };
    } catch (error) {
      this.failed(error);
      return null;
    }
  }

  /** Null while the engine keeps up with what this response sent it; else what to wait for before reading on. */
  behind(): Promise<void> | null {
    return this.state === "following" ? this.link.behind() : null;
  }

  /** Asks again about bytes still held (the final event had begun but not ended). */
  ask(): Promise<Verdict> {
    if (this.state !== "following") return Promise.resolve("not");
    return this.guarded(() => this.link.ask(this.id)) ?? Promise.resolve("not");
  }

  /** True when the last chunk must wait for the end (a non-streaming answer is only whole at its end). */
  get holdsLastChunk(): boolean {
    return this.state === "following" && !this.sse;
  }

  /**
   * The body ended. With `holding` (bytes are held back: a non-streaming answer's last chunk, or a final
   * event not yet ended), returns the verdict to wait for.
   */
  end(holding: boolean): Promise<Verdict> | null {
    if (this.state !== "following") return null;
    return this.guarded(() => {
      this.state = "done";
      this.link.done(this.id);
      if (holding) return this.link.ask(this.id, true);
      this.link.send({ t: "end", id: this.id, ask: null });
      return null;
    }) ?? null;
  }

  /** The body was cut: by the client leaving, or by the upstream failing. */
  cut(by: CutBy): void {
    if (this.state !== "following") return;
    this.guarded(() => this.finish(by));
  }

  /** A held final event went out before its write finished. */
  late(): void {
    this.guarded(() => this.link.send({ t: "late", id: this.id }));
  }

  /** The engine will not mirror this response: stop copying it. */
  ignore(): void {
    if (this.state === "following") this.state = "ignored";
  }

  private finish(by: CutBy | null): void {
    this.state = "done";
    this.link.done(this.id);
    this.link.send(by === null ? { t: "end", id: this.id, ask: null } : { t: "cut", id: this.id, by });
  }

  /** Runs `step`; a throw ignores this response from here on and is reported once (never to the client). */
  private guarded<T>(step: () => T): T | undefined {
    try {
      return step();
    } catch (error) {
      this.failed(error);
      return undefined;
    }
  }

  /** A step threw: this response is ignored from here on, and the engine hears of it once. */
  private failed(error: unknown): void {
    const was = this.state;
    this.state = "ignored";
    // The engine counts it, logs it and forgets this response (the link reports its own failures).
    if (was === "following") {
      this.link.send({ t: "fail", id: this.id, stage: "stream", error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
    }
    this.link.done(this.id);
  }
}
