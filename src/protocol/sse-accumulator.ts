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

const JSON_INPUT_BLOCKS = new Set(["tool_use", "server_tool_use", "mcp_tool_use"]);

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
      case "text_delta":
        block.text = String(block.text ?? "") + String(delta.text ?? "");
        return;
      case "input_json_delta":
        // Fragments are not JSON on their own; they only parse once the block stops.
        this.json.set(index, (this.json.get(index) ?? "") + String(delta.partial_json ?? ""));
        return;
      case "thinking_delta":
        block.thinking = String(block.thinking ?? "") + String(delta.thinking ?? "");
        return;
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
