/**
 * The relay's side of one mirrored response (docs/DESIGN.md "Off the relay path"): it posts the request's
 * bytes, the response head, each chunk and how the body ended to the engine, and never waits for an answer.
 * It never parses. It is the one error boundary of the relay's mirror work: nothing it does can throw into
 * the tee.
 *
 *     following ──(end, cut, gave up: the engine is too far behind, or a failure here)──▶ done
 */
import type { BodyCopy, CutBy, ToEngine } from "../mirror/messages.ts";
import { responseFraming, responseRequestId } from "../protocol/providers/recognise.ts";

/** What an observer needs of the engine's link (engine-link.ts). */
export interface ObserverLink {
  body(id: number, copy: BodyCopy): void;
  /** Copies a chunk; false when the engine is too far behind to be given more (the bytes were not copied). */
  copy(id: number, chunk: Uint8Array): boolean;
  send(message: ToEngine): void;
}

/** Follows one response on the relay. */
export class RelayObserver {
  private following = true;

  constructor(
    private readonly link: ObserverLink,
    readonly id: number,
  ) {}

  /** The request's bytes (the engine takes them over), or why the mirror does not get them. */
  body(copy: BodyCopy): void {
    this.guarded(() => this.link.body(this.id, copy));
  }

  /** The response head, as the client gets it. Returns false when the response is not followed (only a 2xx answer is mirrored: docs/DESIGN.md "The mirror"). */
  head(status: number, headers: Headers): boolean {
    return this.guarded(() => {
      const framing = responseFraming(headers.get("content-type"));
      // Headers as the client gets them: a coding still named there is one fetch did not decode.
      const coding = (headers.get("content-encoding") ?? "").trim().toLowerCase();
      const coded = coding !== "" && coding !== "identity";
      this.link.send({ t: "head", id: this.id, status, requestId: responseRequestId(headers), framing, coded });
      if (status >= 200 && status < 300) return true;
      this.finish({ t: "end", id: this.id });
      return false;
    }) ?? false;
  }

  /** One chunk, copied to the engine; when the engine is too far behind, the mirror gives up on this response instead. */
  chunk(chunk: Uint8Array): void {
    if (!this.following) return;
    // The one step run for every chunk: guarded inline, without a closure per chunk.
    try {
      if (!this.link.copy(this.id, chunk)) this.finish({ t: "cut", id: this.id, by: "behind" });
    } catch (error) {
      this.failed(error);
    }
  }

  /** The body ended normally. */
  end(): void {
    if (this.following) this.guarded(() => this.finish({ t: "end", id: this.id }));
  }

  /** The body was cut: by the client leaving, or by the upstream failing. */
  cut(by: CutBy): void {
    if (this.following) this.guarded(() => this.finish({ t: "cut", id: this.id, by }));
  }

  private finish(last: ToEngine): void {
    this.following = false;
    this.link.send(last);
  }

  /** Runs `step`; a throw ends this response's mirroring and is reported once (never to the client). */
  private guarded<T>(step: () => T): T | undefined {
    try {
      return step();
    } catch (error) {
      this.failed(error);
      return undefined;
    }
  }

  /** A step threw: nothing more of this response is copied, and the engine hears of it once (it counts, logs and forgets it). */
  private failed(error: unknown): void {
    if (!this.following) return;
    this.following = false;
    this.link.send({ t: "fail", id: this.id, stage: "stream", error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
  }
}
