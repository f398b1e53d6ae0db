/**
 * A minimal Messages API client for tests, acting like Claude Code: it keeps the history, re-sends all
 * of it every turn, and appends the assistant message it read from the stream. Its own small SSE fold
 * (text and tool_use only) is independent of the tap's accumulator on purpose.
 */
import { createParser } from "eventsource-parser";

/** A tool definition like the one Claude Code sends. */
export const BASH_TOOL = { name: "Bash", description: "Run a shell command", input_schema: { type: "object", properties: { command: { type: "string" } } } };

/** What one turn returned. */
export interface TurnResult {
  status: number;
  headers: Headers;
  raw: Uint8Array;
  content: Record<string, unknown>[];
}

/** Folds an SSE body into the assistant content blocks (text and tool_use). */
export function foldContent(raw: Uint8Array): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  const json = new Map<number, string>();
  const parser = createParser({
    onEvent(event) {
      const data = JSON.parse(event.data);
      if (data.type === "content_block_start") {
        blocks[data.index] = { ...data.content_block };
        if (data.content_block.type === "tool_use") json.set(data.index, "");
      } else if (data.type === "content_block_delta" && data.delta.type === "text_delta") {
        blocks[data.index].text = String(blocks[data.index].text) + data.delta.text;
      } else if (data.type === "content_block_delta" && data.delta.type === "input_json_delta") {
        json.set(data.index, json.get(data.index) + data.delta.partial_json);
      } else if (data.type === "content_block_stop" && json.has(data.index)) {
        const text = json.get(data.index)!;
        if (text !== "") blocks[data.index].input = JSON.parse(text);
      }
    },
  });
  parser.feed(new TextDecoder().decode(raw));
  return blocks.filter(Boolean);
}

/**
 * Where a conversation is sent: a tap's URL, or a tap in this process that can say when what it was sent
 * is written (the client's last byte comes before the mirror's write: docs/DESIGN.md "Writes").
 */
export type TapTarget = string | { url: string; settled(): Promise<void> };

/** A conversation of one session against a tap. */
export class Conversation {
  readonly messages: { role: string; content: unknown }[] = [];
  private readonly baseUrl: string;

  constructor(
    private readonly target: TapTarget,
    readonly sessionId: string | null,
    private readonly extra: { headers?: Record<string, string>; system?: unknown; body?: Record<string, unknown> } = {},
  ) {
    this.baseUrl = typeof target === "string" ? target : target.url;
  }

  /** Sends the whole history plus `content` as a new user message; on a complete 200 keeps the answer. */
  async say(content: unknown, options: { keepOnFailure?: boolean } = {}): Promise<TurnResult> {
    this.messages.push({ role: "user", content });
    const result = await this.send();
    if (result.status === 200 && result.content.length > 0) this.messages.push({ role: "assistant", content: result.content });
    else if (!options.keepOnFailure) this.messages.pop();
    return result;
  }

  /** Sends the current history as it is (a retry); with a tap that can tell, returns once its mirror has written the turn. */
  async send(): Promise<TurnResult> {
    const result = await this.exchange();
    if (typeof this.target !== "string") await this.target.settled();
    return result;
  }

  private async exchange(): Promise<TurnResult> {
    const headers: Record<string, string> = { "content-type": "application/json", "x-api-key": "sk-ant-test-SECRET", ...this.extra.headers };
    if (this.sessionId !== null) headers["x-claude-code-session-id"] = this.sessionId;
    // Like Claude Code's main conversation: the agent's tools declare it (see src/protocol/classify.ts).
    const body = {
      model: "claude-test",
      max_tokens: 1024,
      stream: true,
      system: this.extra.system,
      tools: [BASH_TOOL],
      messages: this.messages,
      ...this.extra.body,
    };
    const response = await fetch(`${this.baseUrl}/v1/messages?beta=true`, { method: "POST", headers, body: JSON.stringify(body) });
    let raw: Uint8Array;
    try {
      raw = new Uint8Array(await response.arrayBuffer());
    } catch {
      return { status: -1, headers: response.headers, raw: new Uint8Array(), content: [] };
    }
    const complete = new TextDecoder().decode(raw).includes("message_stop");
    const content = response.status === 200 && complete && (response.headers.get("content-type") ?? "").includes("event-stream") ? foldContent(raw) : [];
    return { status: response.status, headers: response.headers, raw, content };
  }
}

/** Texts of a record's message content (string content or text blocks). */
export function textsOf(record: Record<string, unknown>): string[] {
  const content = (record.message as { content: unknown }).content;
  if (typeof content === "string") return [content];
  return (content as { type: string; text?: string }[]).filter((b) => b.type === "text").map((b) => String(b.text));
}

/**
 * Two taps serving one session: `turns` turns alternating between `a` and `b`, each re-sending the whole
 * history as Claude Code does, then four turns at once from the same point through both. After each turn
 * and after the four, `written(records)` resolves once that many records of the session's main
 * conversation are written: a client has an answer's last byte before the tap writes it (docs/DESIGN.md
 * "Writes"), and a turn sent to the other tap first would find its history unwritten. Returns the history
 * and every status, for the caller to assert on.
 */
export async function alternateAndRace(
  a: string,
  b: string,
  session: string,
  turns: number,
  written: (records: number) => Promise<unknown>,
): Promise<{ history: Conversation; statuses: number[]; racers: number[] }> {
  const history = new Conversation(a, session);
  const statuses: number[] = [];
  for (let turn = 0; turn < turns; turn++) {
    const via = new Conversation(turn % 2 === 0 ? a : b, session);
    via.messages.push(...history.messages);
    statuses.push((await via.say(`turn ${turn}`)).status);
    history.messages.splice(0, history.messages.length, ...via.messages);
    await written(2 * (turn + 1));
  }
  const racers = await Promise.all([a, b, a, b].map((url, i) => {
    const c = new Conversation(url, session);
    c.messages.push(...history.messages);
    return c.say(`race ${i}`);
  }));
  await written(2 * (turns + 4));
  return { history, statuses, racers: racers.map((r) => r.status) };
}
