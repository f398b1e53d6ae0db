// Folds the Messages API stream (https://docs.anthropic.com/en/api/messages-streaming) into the assistant message, holding at most
// `maxChars` of it (docs/RELIABILITY.md "Trust boundaries"). Pure.
import { isObject, type Json } from "./json.ts";

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

// Unknown deltas (on their block) and events (on the message) are kept in arrival order; a tool input whose JSON never completed
// is kept verbatim; a message kept only in part says how much was kept and let go.
export const UNKNOWN_DELTAS_KEY = "sessiontap_deltas";
export const UNKNOWN_EVENTS_KEY = "sessiontap_events";
export const PARTIAL_JSON_KEY = "sessiontap_partial_json";
export const TRUNCATED_KEY = "sessiontap_truncated";

const JSON_INPUT_BLOCKS = new Set(["tool_use", "server_tool_use", "mcp_tool_use"]);
// An index past this, or not a whole number, is let go (counted): a block at 4294967294 once made a sparse array walked for minutes.
export const MAX_BLOCKS = 4096;
// How the API's own serialisation begins a content delta.
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
  /** Characters of content kept (text, thinking, tool input), and beside it (see roomFor). */
  private kept = 0;
  private besides = 0;
  /** Characters let go past the bound, and events let go for their shape (a block index out of bounds, a block too many). */
  dropped = 0;
  refused = 0;

  constructor(private readonly maxChars = Number.POSITIVE_INFINITY) {}

  get truncated(): boolean {
    return this.dropped > 0 || this.refused > 0;
  }

  letGo(chars: number): void {
    this.dropped += Math.max(1, chars);
  }

  /** Once anything was let go, everything after it is too. */
  private room(chars: number): boolean {
    if (this.dropped === 0 && this.kept + chars <= this.maxChars) {
      this.kept += chars;
      return true;
    }
    this.letGo(chars);
    return false;
  }

  get started(): boolean {
    return this.base !== null;
  }

  /** message_stop arrived, or message_delta carried a stop_reason: an SDK has the whole answer then. */
  get whole(): boolean {
    return this.complete || (this.messageDelta.stop_reason !== undefined && this.messageDelta.stop_reason !== null);
  }

  /** A content block has begun: something worth keeping if cut short. */
  get hasContent(): boolean {
    return this.blocks.size > 0;
  }

  // What is kept whole beside the content (an unknown event or delta, a citation, a signature, message_delta's fields) counts by
  // its JSON length against a budget of its own as large as the content's.
  private roomFor(value: unknown, chars = JSON.stringify(value)?.length ?? 0): boolean {
    if (this.besides + chars <= this.maxChars) {
      this.besides += chars;
      return true;
    }
    this.letGo(chars);
    return false;
  }

  pushData(data: string): void {
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
        const fields = Object.entries(event).filter(([key]) => key !== "type" && key !== "delta" && key !== "usage");
        if (!this.roomFor([event.delta, fields])) return;
        if (isObject(event.delta)) Object.assign(this.messageDelta, event.delta);
        for (const [key, value] of fields) this.messageDelta[key] = value;
        // Cumulative: each non-null field overwrites what message_start said.
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
    const block = typeof index === "number" ? this.blocks.get(index) : undefined;
    if (block === undefined) return;
    switch (delta.type) {
      case "text_delta": {
        const text = String(delta.text ?? "");
        if (this.room(text.length)) block.text = String(block.text ?? "") + text;
        return;
      }
      case "input_json_delta": {
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

  /** The message so far, tool inputs whose block never stopped closed best-effort (docs/DESIGN.md "Writes"). */
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

function listOn(block: Json, key: string): unknown[] {
  if (!Array.isArray(block[key])) block[key] = [];
  return block[key] as unknown[];
}

export function messageFromJson(body: Json): AssistantMessage {
  const acc = new StreamAccumulator();
  acc.apply({ type: "message_start", message: body });
  return acc.message(false);
}
