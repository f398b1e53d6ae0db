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
/**
 * Most content blocks one answer may have in the mirror. The API numbers blocks from 0; an index past this,
 * or not a whole number, is let go (counted): a `content_block_start` at index 4294967294 made the
 * accumulator a sparse array every `filter` walked for minutes (docs/RELIABILITY.md "Trust boundaries").
 */
export const MAX_BLOCKS = 4096;
/** How the API's content deltas begin (its own serialisation, type first). */
const DELTA_PREFIX = '{"type":"content_block_delta"';

/** Accumulates one response stream; feed it events, then take `message()`. */
export class StreamAccumulator {
  private base: Json | null = null;
  /** Blocks by index (a map, so no index can make a sparse array to walk), put in order by message(). */
  private blocks = new Map<number, Json>();
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
  /** Characters kept beside the content (see roomFor). */
  private besides = 0;
  /** Characters let go past the bound (0: the message is whole). */
  dropped = 0;
  /** Events let go for their shape (a block index out of bounds, a block too many), without ending what is kept. */
  refused = 0;

  /** `maxChars`: most characters of content kept; past it, deltas are counted and let go. */
  constructor(private readonly maxChars = Number.POSITIVE_INFINITY) {}

  /** True when part of the answer was let go (the bound, or an event too large to read). */
  get truncated(): boolean {
    return this.dropped > 0 || this.refused > 0;
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
    return this.blocks.size > 0;
  }

  /** The block at a valid index, or undefined (an index that is not one is never looked up). */
  private blockAt(index: unknown): Json | undefined {
    return typeof index === "number" ? this.blocks.get(index) : undefined;
  }

  /**
   * Room for something kept whole beside the content (an unknown event or delta, a citation, a signature,
   * message_delta's fields), counted by its JSON length against a budget of its own as large as the
   * content's; false, counted as let go, once that is spent.
   */
  private roomFor(value: unknown, chars = JSON.stringify(value)?.length ?? 0): boolean {
    if (this.besides + chars <= this.maxChars) {
      this.besides += chars;
      return true;
    }
    this.letGo(chars);
    return false;
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
        const initial = Array.isArray(message.content) ? (message.content as unknown[]) : [];
        this.blocks = new Map();
        this.json.clear();
        initial.slice(0, MAX_BLOCKS).forEach((b, i) => this.blocks.set(i, isObject(b) ? { ...b } : {}));
        this.refused += Math.max(0, initial.length - MAX_BLOCKS);
        return;
      }
      case "content_block_start": {
        const index = event.index;
        const fresh = typeof index === "number" && !this.blocks.has(index);
        if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= MAX_BLOCKS || (fresh && this.blocks.size >= MAX_BLOCKS)) {
          this.refused++;
          return;
        }
        const block = { ...((event.content_block ?? {}) as Json) };
        this.blocks.set(index as number, block);
        if (JSON_INPUT_BLOCKS.has(String(block.type))) this.json.set(index as number, "");
        return;
      }
      case "content_block_delta":
        this.applyDelta(event.index, (event.delta ?? {}) as Json);
        return;
      case "content_block_stop":
        if (typeof event.index === "number") this.finishJson(event.index);
        return;
      case "message_delta": {
        // Fields other than usage are kept whole, so they count against the bound like content.
        const fields = Object.entries(event).filter(([key]) => key !== "type" && key !== "delta" && key !== "usage");
        if (!this.roomFor([event.delta, fields])) return;
        if (isObject(event.delta)) Object.assign(this.messageDelta, event.delta);
        for (const [key, value] of fields) this.messageDelta[key] = value;
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
        if (this.roomFor(event)) this.unknownEvents.push(event);
    }
  }

  private applyDelta(index: unknown, delta: Json): void {
    const block = this.blockAt(index);
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
        if (this.room(part.length)) this.json.set(index as number, (this.json.get(index as number) ?? "") + part);
        return;
      }
      case "thinking_delta": {
        const thinking = String(delta.thinking ?? "");
        if (this.room(thinking.length)) block.thinking = String(block.thinking ?? "") + thinking;
        return;
      }
      case "signature_delta": {
        // A signature replaces, it does not accumulate: only its growth counts against the bound.
        const grows = String(delta.signature ?? "").length - String(block.signature ?? "").length;
        if (this.roomFor(null, Math.max(0, grows))) block.signature = delta.signature;
        return;
      }
      case "citations_delta":
        // Appended in place: a copy of the list per delta made a long stream of them quadratic.
        if (this.roomFor(delta.citation)) listOn(block, "citations").push(delta.citation);
        return;
      default:
        if (this.roomFor(delta)) listOn(block, UNKNOWN_DELTAS_KEY).push(delta);
    }
  }

  /** Parses a JSON-input block's buffered fragments into `input`; an unparsable buffer is kept verbatim. */
  private finishJson(index: number): void {
    const buffer = this.json.get(index);
    const block = this.blocks.get(index);
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
      content: [...this.blocks.keys()].sort((a, b) => a - b).map((i) => this.blocks.get(i)!),
      stop_reason: base.stop_reason ?? null,
      stop_sequence: base.stop_sequence ?? null,
      stop_details: base.stop_details ?? null,
      usage: this.usage,
    };
    Object.assign(out, this.messageDelta);
    if (interrupted) out.stop_reason = "interrupted";
    if (this.truncated) {
      out[TRUNCATED_KEY] = this.refused > 0
        ? { keptChars: this.kept, droppedChars: this.dropped, refusedEvents: this.refused }
        : { keptChars: this.kept, droppedChars: this.dropped };
    }
    if (this.unknownEvents.length > 0) out[UNKNOWN_EVENTS_KEY] = this.unknownEvents;
    return out;
  }
}

/** The list under `key` on a block, made there if absent (not a list: replaced by one). */
function listOn(block: Json, key: string): unknown[] {
  if (!Array.isArray(block[key])) block[key] = [];
  return block[key] as unknown[];
}

/** Shapes a non-streaming Messages API response like an accumulated stream's result. */
export function messageFromJson(body: Json): AssistantMessage {
  const acc = new StreamAccumulator();
  acc.apply({ type: "message_start", message: body });
  return acc.message(false);
}
