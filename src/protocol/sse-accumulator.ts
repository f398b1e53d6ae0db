// The Messages API stream (https://docs.anthropic.com/en/api/messages-streaming) → the assistant message, at most `maxChars` of it. Pure.
import { createParser, type EventSourceParser } from "eventsource-parser";
import { isObject, type Json, jsonObject } from "./json.ts";

export interface AssistantMessage extends Json {
  type: string;
  role: "assistant";
  id: string | null;
  model: string | null;
  content: Json[];
  usage: Json | null;
}

export const UNKNOWN_DELTAS_KEY = "sessiontap_deltas";
export const UNKNOWN_EVENTS_KEY = "sessiontap_events";
export const PARTIAL_JSON_KEY = "sessiontap_partial_json";
export const TRUNCATED_KEY = "sessiontap_truncated";

const JSON_INPUT_BLOCKS = new Set(["tool_use", "server_tool_use", "mcp_tool_use"]);
// A block at 4294967294 once made a sparse array walked for minutes.
export const MAX_BLOCKS = 4096;
const DELTA_PREFIX = '{"type":"content_block_delta"';

export class StreamAccumulator {
  private base: Json | null = null;
  private blocks = new Map<number, Json>();
  private json = new Map<number, string>();
  private unknownEvents: Json[] = [];
  private messageDelta: Json = {};
  private usage: Json | null = null;
  complete = false;
  error: Json | null = null;
  malformed = 0;
  private kept = 0;
  private besides = 0;
  /** Characters let go past the bound; `refused`: events let go for their shape (a block index out of bounds, a block too many). */
  dropped = 0;
  refused = 0;

  constructor(private readonly maxChars = Number.POSITIVE_INFINITY) {}

  get truncated(): boolean {
    return this.dropped > 0 || this.refused > 0;
  }

  letGo(chars: number): void {
    this.dropped += Math.max(1, chars);
  }

  // Content, and what is kept whole beside it (by its JSON length), have a budget each; once content was let go, all after it is too.
  private room(chars: number, beside = false): boolean {
    const fits = beside ? this.besides + chars <= this.maxChars : this.dropped === 0 && this.kept + chars <= this.maxChars;
    if (!fits) this.letGo(chars);
    else if (beside) this.besides += chars;
    else this.kept += chars;
    return fits;
  }

  private roomFor(value: unknown): boolean {
    return this.room(JSON.stringify(value)?.length ?? 0, true);
  }

  /** message_stop arrived, or message_delta carried a stop_reason: an SDK has the whole answer then. */
  get whole(): boolean {
    return this.complete || (this.messageDelta.stop_reason ?? null) !== null;
  }

  get hasContent(): boolean {
    return this.blocks.size > 0;
  }

  pushData(data: string): void {
    if (this.dropped > 0 && data.startsWith(DELTA_PREFIX)) return this.letGo(data.length);
    const event = jsonObject(data);
    if (event === null) this.malformed++;
    else this.apply(event);
  }

  apply(event: Json): void {
    switch (event.type) {
      case "message_start": {
        const message = (event.message ?? {}) as Json;
        this.base = { ...message };
        this.usage = isObject(message.usage) ? { ...message.usage } : null;
        const initial = Array.isArray(message.content) ? (message.content as unknown[]) : [];
        this.blocks.clear();
        this.json.clear();
        initial.slice(0, MAX_BLOCKS).forEach((b, i) => this.blocks.set(i, isObject(b) ? { ...b } : {}));
        this.refused += Math.max(0, initial.length - MAX_BLOCKS);
        return;
      }
      case "content_block_start": {
        const index = event.index as number;
        if (!Number.isInteger(index) || index < 0 || index >= MAX_BLOCKS) return void this.refused++;
        const block = { ...((event.content_block ?? {}) as Json) };
        this.blocks.set(index, block);
        if (JSON_INPUT_BLOCKS.has(String(block.type))) this.json.set(index, "");
        return;
      }
      case "content_block_delta":
        this.applyDelta(event.index as number, (event.delta ?? {}) as Json);
        return;
      case "content_block_stop":
        if (typeof event.index === "number") this.finishJson(event.index);
        return;
      case "message_delta": {
        const fields = Object.entries(event).filter(([key]) => key !== "type" && key !== "delta" && key !== "usage");
        if (!this.roomFor([event.delta, fields])) return;
        if (isObject(event.delta)) Object.assign(this.messageDelta, event.delta);
        for (const [key, value] of fields) this.messageDelta[key] = value;
        if (isObject(event.usage)) {
          this.usage ??= {};
          for (const [key, value] of Object.entries(event.usage)) if (value !== null) this.usage[key] = value;
        }
        return;
      }
      case "message_stop":
        this.complete = true;
        return;
      case "ping":
        return;
      case "error":
        this.error = isObject(event.error) ? (event.error as Json) : event;
        return;
      default:
        if (this.roomFor(event)) this.unknownEvents.push(event);
    }
  }

  private applyDelta(index: number, delta: Json): void {
    const block = this.blocks.get(index);
    if (block === undefined) return;
    switch (delta.type) {
      case "text_delta":
      case "thinking_delta": {
        const key = delta.type === "text_delta" ? "text" : "thinking";
        const part = String(delta[key] ?? "");
        if (this.room(part.length)) block[key] = String(block[key] ?? "") + part;
        return;
      }
      case "input_json_delta": {
        const part = String(delta.partial_json ?? "");
        if (this.room(part.length)) this.json.set(index, (this.json.get(index) ?? "") + part);
        return;
      }
      case "signature_delta": {
        // A signature replaces, it does not accumulate: only its growth counts.
        const grows = String(delta.signature ?? "").length - String(block.signature ?? "").length;
        if (this.room(Math.max(0, grows), true)) block.signature = delta.signature;
        return;
      }
      case "citations_delta": // in place: a copy of the list per delta was quadratic
        if (this.roomFor(delta.citation)) listOn(block, "citations").push(delta.citation);
        return;
      default:
        if (this.roomFor(delta)) listOn(block, UNKNOWN_DELTAS_KEY).push(delta);
    }
  }

  private finishJson(index: number): void {
    const buffer = this.json.get(index);
    const block = this.blocks.get(index);
    if (buffer === undefined || block === undefined) return;
    this.json.delete(index);
    if (buffer.trim() === "") return; // input arrived whole in content_block_start
    try {
      block.input = JSON.parse(buffer);
    } catch {
      block[PARTIAL_JSON_KEY] = buffer;
    }
  }

  message(interrupted = false): AssistantMessage {
    for (const index of [...this.json.keys()]) this.finishJson(index);
    const base = this.base ?? {};
    const out: AssistantMessage = {
      ...base,
      type: String(base.type ?? "message"),
      role: "assistant",
      id: (base.id as string | undefined) ?? null,
      model: (base.model as string | undefined) ?? null,
      content: [...this.blocks.keys()].sort((a, b) => a - b).map((i) => this.blocks.get(i)!),
      stop_reason: base.stop_reason ?? null,
      stop_sequence: base.stop_sequence ?? null,
      stop_details: base.stop_details ?? null,
      usage: this.usage,
    };
    Object.assign(out, this.messageDelta);
    if (interrupted) out.stop_reason = "interrupted";
    if (this.truncated) {
      out[TRUNCATED_KEY] = { keptChars: this.kept, droppedChars: this.dropped, ...(this.refused > 0 ? { refusedEvents: this.refused } : {}) };
    }
    if (this.unknownEvents.length > 0) out[UNKNOWN_EVENTS_KEY] = this.unknownEvents;
    return out;
  }
}

function listOn(block: Json, key: string): unknown[] {
  if (!Array.isArray(block[key])) block[key] = [];
  return block[key] as unknown[];
}

export function messageFromJson(body: Json): AssistantMessage {
  const acc = new StreamAccumulator();
  acc.apply({ type: "message_start", message: body });
  return acc.message(false);
}

/** Holds at most about `maxChars` of one answer (docs/RELIABILITY.md "Trust boundaries"): an event past it is dropped whole. */
export class SseMessageReader {
  readonly acc: StreamAccumulator;
  readonly broken = null;
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser;
  private overflowed = false;
  // The last two characters fed, or (while an event past the bound is passed over) passed over.
  private fed = "\n\n";
  private dropping: string | null = null;

  constructor(private readonly maxChars: number) {
    this.acc = new StreamAccumulator(maxChars);
    this.parser = createParser({
      // The parser bounds what it holds between feeds; an event that came whole in one feed is bounded here.
      onEvent: ({ data }) => data.length > maxChars ? this.acc.letGo(data.length) : this.acc.pushData(data),
      onError: (error) => void (this.overflowed ||= error.type === "max-buffer-size-exceeded"),
      maxBufferSize: maxChars,
    });
  }

  get whole(): boolean {
    return this.acc.whole;
  }

  feed(chunk: Uint8Array): void {
    this.text(this.decoder.decode(chunk, { stream: true }));
  }

  // An event is handed over at its blank line, and a whole answer may end without one: the end is fed as one.
  end(): void {
    this.text(this.decoder.decode());
    this.text("\n\n");
  }

  private text(text: string): void {
    if (this.dropping !== null) text = this.passOver(text);
    if (text === "") return;
    this.fed = (this.fed + text.slice(-2)).slice(-2);
    this.parser.feed(text);
    if (!this.overflowed) return;
    // eventsource-parser stops at its maxBufferSize and has no skip-over: the rest of that event is passed over here.
    this.overflowed = false;
    this.acc.letGo(this.maxChars + 1);
    this.parser.reset();
    this.dropping = this.fed;
  }

  // Up to the blank line; a \n that completes its \r\n reaches the fresh parser as an empty line: a no-op.
  private passOver(text: string): string {
    const seen = this.dropping + text;
    const blank = /(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)/.exec(seen);
    if (blank === null) {
      this.dropping = seen.slice(-2);
      return "";
    }
    const end = Math.max(seen.length - text.length, blank.index + blank[0].length);
    this.dropping = null;
    this.fed = seen.slice(0, end).slice(-2);
    return seen.slice(end);
  }
}
