// Builders for Anthropic Messages API replies (SSE event lists and non-streaming JSON messages)
// used by the stub upstream and by tests that script their own replies.

/** Usage figures every built reply carries (input 100, cache read 50, output 10). */
export const STUB_USAGE = {
  input_tokens: 100,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 50,
  output_tokens: 10,
} as const;

/** Model name used when a builder is not given one. */
export const DEFAULT_MODEL = "claude-sonnet-4-5";

let autoId = 0;

/** Formats one SSE event: "event: <type>\ndata: <JSON>\n\n". */
export function sseEvent(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Splits `s` into at most `n` non-empty consecutive pieces of near-equal length (at least one piece). */
export function splitInto(s: string, n: number): string[] {
  const count = Math.max(1, Math.min(Math.floor(n), s.length));
  const out: string[] = [];
  let start = 0;
  for (let i = 0; i < count; i++) {
    const end = Math.round(((i + 1) * s.length) / count);
    out.push(s.slice(start, end));
    start = end;
  }
  return out;
}

/** The `message_start` event of an answer. */
export function messageStart(id: string, model: string): string {
  return sseEvent("message_start", {
    type: "message_start",
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...STUB_USAGE, output_tokens: 1 },
    },
  });
}

function textBlockEvents(index: number, text: string, deltas: number, ping: boolean): string[] {
  const out = [sseEvent("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } })];
  if (ping) out.push(sseEvent("ping", { type: "ping" }));
  for (const piece of splitInto(text, deltas)) {
    out.push(sseEvent("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } }));
  }
  out.push(sseEvent("content_block_stop", { type: "content_block_stop", index }));
  return out;
}

/** The last two events of an answer: `message_delta` with its stop reason, then `message_stop`. */
export function messageEnd(stopReason: string): string[] {
  return [
    sseEvent("message_delta", {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { ...STUB_USAGE },
    }),
    sseEvent("message_stop", { type: "message_stop" }),
  ];
}

/** Full SSE event list for a plain text reply, one string per event (message_start … message_stop). */
export function textReply(text: string, opts: { id?: string; model?: string; deltas?: number } = {}): string[] {
  const id = opts.id ?? `msg_stub_auto_${++autoId}`;
  return [
    messageStart(id, opts.model ?? DEFAULT_MODEL),
    ...textBlockEvents(0, text, opts.deltas ?? 3, true),
    ...messageEnd("end_turn"),
  ];
}

/** Full SSE event list for text + tool_use (input_json_delta fragments, first one empty), stop_reason tool_use. */
export function toolUseReply(
  toolName: string,
  input: unknown,
  opts: { id?: string; toolUseId?: string; preText?: string; model?: string } = {},
): string[] {
  const n = ++autoId;
  const id = opts.id ?? `msg_stub_auto_${n}`;
  const toolUseId = opts.toolUseId ?? `toolu_stub_auto_${n}`;
  const json = JSON.stringify(input);
  const out = [messageStart(id, opts.model ?? DEFAULT_MODEL), ...textBlockEvents(0, opts.preText ?? "I'll use a tool.", 2, true)];
  out.push(sseEvent("content_block_start", {
    type: "content_block_start",
    index: 1,
    content_block: { type: "tool_use", id: toolUseId, name: toolName, input: {} },
  }));
  for (const partial of ["", ...splitInto(json, 3)]) {
    out.push(sseEvent("content_block_delta", { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: partial } }));
  }
  out.push(sseEvent("content_block_stop", { type: "content_block_stop", index: 1 }));
  return [...out, ...messageEnd("tool_use")];
}

/** Non-streaming Messages API response body with the given content blocks and stop reason. */
export function messageJson(id: string, model: string, content: unknown[], stopReason: string): Record<string, unknown> {
  return {
    id,
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { ...STUB_USAGE },
  };
}

/** Anthropic-shaped error body: {"type":"error","error":{"type":…,"message":…}}. */
export function errorJson(type: string, message: string): Record<string, unknown> {
  return { type: "error", error: { type, message } };
}

/** An answer that thinks `thinking` (signed) and then says `text`. */
export function thinkingReply(thinking: string, text: string): string[] {
  const block = (index: number, start: unknown, deltas: unknown[]) => [
    sseEvent("content_block_start", { type: "content_block_start", index, content_block: start }),
    ...deltas.map((delta) => sseEvent("content_block_delta", { type: "content_block_delta", index, delta })),
    sseEvent("content_block_stop", { type: "content_block_stop", index }),
  ];
  return [
    messageStart(`msg_secret_${Math.random().toString(36).slice(2)}`, DEFAULT_MODEL),
    ...block(0, { type: "thinking", thinking: "", signature: "" }, [{ type: "thinking_delta", thinking }, { type: "signature_delta", signature: "c2lnbmVk" }]),
    ...block(1, { type: "text", text: "" }, [{ type: "text_delta", text }]),
    ...messageEnd("end_turn"),
  ];
}
