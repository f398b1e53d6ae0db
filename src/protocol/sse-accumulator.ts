/**
 * Folds the Messages API stream (message_start … message_stop) into the complete assistant message.
 * Pure: events in, a message out. Event shapes: https://docs.anthropic.com/en/api/messages-streaming
 */
import { isObject, type Json } from "./json.ts";

/** The assistant message as Claude Code stores it in `record.message` (docs/DESIGN.md "The mirror"). */
export interface AssistantMessage extends Json {
  type: string;
  role: "assistant";
  id: string | null;
  model: string | null;
  content: Json[];
  stop_reason: unknown;
  stop_sequence: unknown;
  stop_details: unknown;
  usage: Json | null;
}

/** Key under which unknown delta types are kept on their block, in arrival order. */
export const UNKNOWN_DELTAS_KEY = "sessiontap_deltas";
/** Key under which unknown event types are kept on the message, in arrival order. */
export const UNKNOWN_EVENTS_KEY = "sessiontap_events";
/** Key holding a tool input whose JSON never completed (interrupted, or invalid), verbatim. */
export const PARTIAL_JSON_KEY = "sessiontap_partial_json";
/**
 * Key marking a message the mirror kept only in part: the answer grew past SESSIONTAP_MAX_MESSAGE_BYTES
 * (docs/RELIABILITY.md "Trust boundaries"). Its value says how much was kept and how much was let go.
 */
export const TRUNCATED_KEY = "sessiontap_truncated";

const JSON_INPUT_BLOCKS = new Set(["tool_use", "server_tool_use", "mcp_tool_use"]);
/** How the API's content deltas begin (its own serialisation, type first). */
const DELTA_PREFIX = '{"type":"content_block_delta"';

/** Accumulates one response stream; feed it events, then take `message()`. */
export class StreamAccumulator {
  private base: Json | null = null;
  private blocks: (Json | undefined)[] = [];
  private json = new Map<number, string>();
  private unknownEvents: Json[] = [];
  private messageDelta: Json = {};
  private usage: Json | null = null;
  /** True once message_stop arrived. */
  complete = false;
  /** The `error` event's payload, when the stream carried one. */
  error: Json | null = null;
  /** Count of data payloads that were not JSON objects (kept out of the message). */
  malformed = 0;
  /** Characters of content kept so far (text, thinking, tool input). */
  private kept = 0;
  /** Characters let go past the bound (0: the message is whole). */
  dropped = 0;

  /** `maxChars`: most characters of content kept; past it, deltas are counted and let go. */
  constructor(private readonly maxChars = Number.POSITIVE_INFINITY) {}

  /** True when part of the answer was let go (the bound, or an event too large to read). */
  get truncated(): boolean {
    return this.dropped > 0;
  }

  /** Counts characters the stream carried that the mirror did not keep (an event too large to read). */
  letGo(chars: number): void {
    this.dropped += Math.max(1, chars);
  }

  /** True when `chars` more characters may be kept; otherwise counts them as let go (and everything after them). */
  private room(chars: number): boolean {
    if (this.dropped === 0 && this.kept + chars <= this.maxChars) {
      this.kept += chars;
      return true;
    }
    this.letGo(chars);
    return false;
  }

  /** True once message_start arrived. */
  get started(): boolean {
    return this.base !== null;
  }

  /**
   * True once the message is whole for the client: message_stop arrived, or message_delta carried a
   * stop_reason (an SDK has the whole answer then, even if the stream ends without message_stop).
   */
  get whole(): boolean {
    return this.complete || (this.messageDelta.stop_reason !== undefined && this.messageDelta.stop_reason !== null);
  }

  /** True when at least one content block has begun: there is something worth keeping if cut short. */
  get hasContent(): boolean {
    return this.blocks.some((b) => b !== undefined);
  }

  /** Feeds one SSE event's data (the `event:` name is advisory; the payload's `type` decides). */
  pushData(data: string): void {
    // Past the bound every delta is let go: one that says so in its first bytes need not be parsed.
    if (this.dropped > 0 && data.startsWith(DELTA_PREFIX)) return this.letGo(data.length);
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      this.malformed++;
      return;
    }
    if (typeof event !== "object" || event === null || Array.isArray(event)) {
      this.malformed++;
      return;
    }
    this.apply(event as Json);
  }

  /** Applies one parsed stream event. */
  apply(event: Json): void {
    switch (event.type) {
      case "message_start": {
        const message = (event.message ?? {}) as Json;
        this.base = { ...message };
        this.usage = isObject(message.usage) ? { ...message.usage } : null;
        const initial = Array.isArray(message.content) ? (message.content as Json[]) : [];
        this.blocks = initial.map((b) => ({ ...b }));
        return;
      }
      case "content_block_start": {
        const index = Number(event.index);
        const block = { ...((event.content_block ?? {}) as Json) };
        this.blocks[index] = block;
        if (JSON_INPUT_BLOCKS.has(String(block.type))) this.json.set(index, "");
        return;
      }
      case "content_block_delta":
        this.applyDelta(Number(event.index), (event.delta ?? {}) as Json);
        return;
      case "content_block_stop":
        this.finishJson(Number(event.index));
        return;
      case "message_delta": {
        if (isObject(event.delta)) Object.assign(this.messageDelta, event.delta);
        for (const [key, value] of Object.entries(event)) {
          if (key !== "type" && key !== "delta" && key !== "usage") this.messageDelta[key] = value;
        }
        // message_delta usage is cumulative: each non-null field overwrites what message_start said.
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
        this.unknownEvents.push(event);
    }
  }

  private applyDelta(index: number, delta: Json): void {
    const block = this.blocks[index];
    if (block === undefined) return;
    switch (delta.type) {
      case "text_delta": {
        const text = String(delta.text ?? "");
        if (this.room(text.length)) block.text = String(block.text ?? "") + text;
        return;
      }
      case "input_json_delta": {
        // Fragments are not JSON on their own; they only parse once the block stops.
        const part = String(delta.partial_json ?? "");
        if (this.room(part.length)) this.json.set(index, (this.json.get(index) ?? "") + part);
        return;
      }
      case "thinking_delta": {
        const thinking = String(delta.thinking ?? "");
        if (this.room(thinking.length)) block.thinking = String(block.thinking ?? "") + thinking;
        return;
      }
      case "signature_delta":
        block.signature = delta.signature; // a signature replaces, it does not accumulate
        return;
      case "citations_delta":
        block.citations = [...(Array.isArray(block.citations) ? block.citations : []), delta.citation];
        return;
      default: {
        const kept = Array.isArray(block[UNKNOWN_DELTAS_KEY]) ? (block[UNKNOWN_DELTAS_KEY] as unknown[]) : [];
        block[UNKNOWN_DELTAS_KEY] = [...kept, delta];
      }
    }
  }

  /** Parses a JSON-input block's buffered fragments into `input`; an unparsable buffer is kept verbatim. */
  private finishJson(index: number): void {
    const buffer = this.json.get(index);
    const block = this.blocks[index];
    if (buffer === undefined || block === undefined) return;
    this.json.delete(index);
    if (buffer.trim() === "") return; // input arrived whole in content_block_start
    try {
      block.input = JSON.parse(buffer);
    } catch {
      // Cut short (max_tokens, an interruption) or invalid: keep `input` as it started, the text verbatim.
      block[PARTIAL_JSON_KEY] = buffer;
    }
  }

  /**
   * The message so far. Tool inputs whose block never stopped are closed best-effort; with
   * `interrupted`, `stop_reason` becomes "interrupted" (docs/DESIGN.md "Writes").
   */
  message(interrupted = false): AssistantMessage {
    for (const index of [...this.json.keys()]) this.finishJson(index);
    const base = this.base ?? {};
    const out: AssistantMessage = {
      ...base,
      type: String(base.type ?? "message"),
      role: "assistant",
      id: (base.id as string | undefined) ?? null,
      model: (base.model as string | undefined) ?? null,
      content: this.blocks.filter((b): b is Json => b !== undefined),
      stop_reason: base.stop_reason ?? null,
      stop_sequence: base.stop_sequence ?? null,
      stop_details: base.stop_details ?? null,
      usage: this.usage,
    };
    Object.assign(out, this.messageDelta);
    if (interrupted) out.stop_reason = "interrupted";
    if (this.truncated) out[TRUNCATED_KEY] = { keptChars: this.kept, droppedChars: this.dropped };
    if (this.unknownEvents.length > 0) out[UNKNOWN_EVENTS_KEY] = this.unknownEvents;
    return out;
  }
}

/** Shapes a non-streaming Messages API response like an accumulated stream's result. */
export function messageFromJson(body: Json): AssistantMessage {
  const acc = new StreamAccumulator();
  acc.apply({ type: "message_start", message: body });
  return acc.message(false);
}
