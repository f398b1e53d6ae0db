// The bench's workloads: Anthropic Messages API request bodies and SSE answers, built deterministically so
// the stub, the load driver and the in-process microbenchmark agree byte for byte. Plain ESM: runs on
// Node (stub, driver, orchestrator) and on Bun (micro.mjs).

/** Text of the short answer (every conversation turn of the TTFB scenario and the history scenario). */
export const SHORT_TEXT = "Done. The change is in place and the tests pass.";
/** Text deltas in the long answer. */
export const LONG_DELTAS = 2000;
/** Text deltas in the paced answer (the memory and concurrency scenarios). */
export const PACED_DELTAS = 250;
/** Every answer kind the stub can send. */
export const ANSWER_KINDS = ["short", "long", "tool", "paced"];
/** Approximate bytes of text in each delta of the long answer. */
export const DELTA_BYTES = 100;
/** Bytes of tool input JSON in the tool-call answer. */
export const TOOL_INPUT_BYTES = 64 * 1024;
/** Bytes of the 200-turn history request. */
export const HISTORY_BYTES = 4 * 1024 * 1024;
/** Turns (assistant tool call + user tool result) in the history request. */
export const HISTORY_TURNS = 200;

const MODEL = "claude-sonnet-4-5-20250929";
const USAGE = { input_tokens: 1200, cache_creation_input_tokens: 0, cache_read_input_tokens: 48000, output_tokens: 1 };

/** Formats one SSE event as the API does: "event: <type>\ndata: <JSON>\n\n". */
export function sseEvent(type, data) {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A deterministic pseudo-random generator (mulberry32), so every run builds the same bytes. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "the a tap stream event request response mirror session history message block delta tool result " +
  "function returns value error handler buffer chunk client upstream latency test file path line code " +
  "we should first check whether it is already done then update écrit naïve — “quoted” 10 200 3.5"
).split(" ");

/** Prose of about `bytes` UTF-8 bytes (words, punctuation, the odd newline and non-ASCII character). */
export function prose(bytes, seed) {
  const next = rng(seed);
  const parts = [];
  let size = 0;
  while (size < bytes) {
    const r = next();
    const part = WORDS[Math.floor(next() * WORDS.length)] + (r < 0.06 ? ".\n" : r < 0.12 ? ", " : " ");
    parts.push(part);
    size += Buffer.byteLength(part);
  }
  return parts.join("");
}

/** Code-like text of about `bytes` bytes (quotes, backslashes, newlines: what a Write tool call carries). */
export function code(bytes, seed) {
  const next = rng(seed);
  const lines = [];
  let size = 0;
  let n = 0;
  while (size < bytes) {
    const w = WORDS[Math.floor(next() * 40)];
    const line = `  const ${w}${n} = await read("${w}/${n}.json", { strict: true }); // ${w}\\n\n`;
    lines.push(line);
    size += line.length;
    n++;
  }
  return lines.join("").slice(0, bytes);
}

/** Splits `s` into pieces of about `size` characters. */
function pieces(s, size) {
  const out = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

/** The message_start event with a fixed-width id, so every answer of a kind has the same byte length. */
export function messageStart(n) {
  const id = `msg_bench_${String(n).padStart(12, "0")}`;
  return sseEvent("message_start", {
    type: "message_start",
    message: { id, type: "message", role: "assistant", model: MODEL, content: [], stop_reason: null, stop_sequence: null, usage: USAGE },
  });
}

/** The text block events (start, ping, deltas, stop) for `deltas` pieces of text. */
function textBlock(index, parts) {
  const out = [sseEvent("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } })];
  if (index === 0) out.push(sseEvent("ping", { type: "ping" }));
  for (const text of parts) out.push(sseEvent("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text } }));
  out.push(sseEvent("content_block_stop", { type: "content_block_stop", index }));
  return out;
}

/** message_delta and message_stop. */
function messageEnd(stopReason, outputTokens) {
  return [
    sseEvent("message_delta", {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { ...USAGE, output_tokens: outputTokens },
    }),
    sseEvent("message_stop", { type: "message_stop" }),
  ];
}

/**
 * The events of each answer kind after message_start: `short` (a one-line reply), `long` (2,000 text
 * deltas of ~100 B), `tool` (a Write tool call whose input JSON is 64 KiB, in ~64 B fragments), `paced`
 * (250 text deltas of ~100 B: the answer the concurrency scenarios send at a model's pace).
 */
export function answerTail(kind) {
  if (kind === "short") return [...textBlock(0, pieces(SHORT_TEXT, 10)), ...messageEnd("end_turn", 12)];
  if (kind === "long" || kind === "paced") {
    const deltas = kind === "long" ? LONG_DELTAS : PACED_DELTAS;
    const text = prose(deltas * DELTA_BYTES + 4096, 7);
    const parts = [];
    let at = 0;
    for (let i = 0; i < deltas; i++) {
      // ~100 B each, cut on a character boundary; varied a little like real token groups.
      const len = DELTA_BYTES - 8 + ((i * 7) % 17);
      parts.push(text.slice(at, at + len));
      at += len;
    }
    return [...textBlock(0, parts), ...messageEnd("end_turn", deltas * 12)];
  }
  if (kind === "tool") {
    const head = `{"file_path":"/work/bench/src/generated.ts","content":`;
    let body = code(TOOL_INPUT_BYTES, 11);
    let json = head + JSON.stringify(body) + "}";
    // Trim the content until the whole input JSON is exactly TOOL_INPUT_BYTES bytes.
    while (json.length > TOOL_INPUT_BYTES) {
      body = body.slice(0, body.length - (json.length - TOOL_INPUT_BYTES));
      if (body.endsWith("\\")) body = body.slice(0, -1);
      json = head + JSON.stringify(body) + "}";
    }
    const out = [...textBlock(0, ["I'll write ", "the file now."])];
    out.push(sseEvent("content_block_start", {
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: "toolu_bench_000000000001", name: "Write", input: {} },
    }));
    for (const partial of ["", ...pieces(json, 64)]) {
      out.push(sseEvent("content_block_delta", { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: partial } }));
    }
    out.push(sseEvent("content_block_stop", { type: "content_block_stop", index: 1 }));
    return [...out, ...messageEnd("tool_use", 20000)];
  }
  throw new Error(`unknown answer kind ${kind}`);
}

/** Bytes and event count of one whole answer of `kind` (message_start included). */
export function answerSize(kind) {
  const tail = answerTail(kind);
  const bytes = Buffer.byteLength(messageStart(0)) + tail.reduce((n, e) => n + Buffer.byteLength(e), 0);
  return { bytes, events: tail.length + 1 };
}

/** A Claude-Code-like system prompt with its environment block, about `bytes` long. */
function systemPrompt(bytes) {
  const env = "<env>\nPrimary working directory: /work/bench\nIs directory a git repo: Yes\nPlatform: linux\n</env>\n" +
    "Current branch: main\n";
  return [
    { type: "text", text: "You are Claude Code, Anthropic's official CLI for Claude." },
    { type: "text", text: prose(bytes, 3) + "\n" + env, cache_control: { type: "ephemeral" } },
  ];
}

/** Tool definitions, about `bytes` in total. */
function tools(bytes) {
  const names = ["Bash", "Read", "Write", "Edit", "Glob", "Grep", "Task", "WebFetch", "TodoWrite", "NotebookEdit"];
  const each = Math.max(200, Math.floor(bytes / names.length));
  return names.map((name, i) => ({
    name,
    description: prose(each - 150, 100 + i),
    input_schema: { type: "object", properties: { file_path: { type: "string" }, command: { type: "string" } }, required: ["file_path"] },
  }));
}

/** The JSON of a request body up to (and including) the `[` that opens `messages`. */
function bodyHead(sessionId, systemBytes, toolBytes) {
  const head = {
    model: MODEL,
    max_tokens: 32000,
    stream: true,
    system: systemPrompt(systemBytes),
    tools: tools(toolBytes),
    metadata: { user_id: JSON.stringify({ device_id: "bench", session_id: sessionId }) },
  };
  const json = JSON.stringify(head);
  return json.slice(0, -1) + ',"messages":[';
}

/** A user text message. */
export function userText(text) {
  return { role: "user", content: [{ type: "text", text }] };
}

/** The assistant message the mirror accumulates from the short answer (what a client sends back as history). */
export function shortAssistant() {
  return { role: "assistant", content: [{ type: "text", text: SHORT_TEXT }] };
}

/**
 * A conversation request of about 16 KiB of system prompt and tools: turn `turn` of a session whose
 * earlier turns were answered with the short answer (`turn` 0 is the first prompt).
 */
export function conversationBody(sessionId, turn, prompt = "Please fix the failing test") {
  const messages = [userText(`${prompt} (turn 0)`)];
  for (let k = 1; k <= turn; k++) messages.push(shortAssistant(), userText(`${prompt} (turn ${k})`));
  return bodyHead(sessionId, 8 * 1024, 8 * 1024) + messages.map((m) => JSON.stringify(m)).join(",") + "]}";
}

/**
 * The 4 MiB request carrying 200 turns of history (assistant text + tool call, user tool result), and
 * after it `extra` further exchanges answered with the short answer: extra 0 is the session's first
 * request the tap sees (all history is new), extra k ≥ 1 adds one exchange per request (steady state).
 */
export class HistoryBody {
  /** Builds the fixed 200-turn part once (about 4 MiB). */
  constructor(sessionId, turns = HISTORY_TURNS, bytes = HISTORY_BYTES) {
    const head = bodyHead(sessionId, 12 * 1024, 16 * 1024);
    const messages = [userText("Refactor the storage layer and keep the tests green.")];
    let size = head.length + JSON.stringify(messages[0]).length;
    for (let t = 0; t < turns; t++) {
      const id = `toolu_hist_${String(t).padStart(8, "0")}`;
      const assistant = {
        role: "assistant",
        content: [
          { type: "text", text: prose(240, 1000 + t) },
          { type: "tool_use", id, name: "Read", input: { file_path: `/work/bench/src/file${t}.ts` } },
        ],
      };
      const a = JSON.stringify(assistant).length + 1;
      const frame = JSON.stringify({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "" }] }).length + 1;
      // Fill each tool result so the whole body lands on `bytes` (escapes make JSON a little longer).
      const want = Math.max(100, Math.floor(((bytes - 2000) - size) / (turns - t)) - a - frame);
      let content = code(want, 2000 + t);
      while (JSON.stringify(content).length - 2 > want) content = content.slice(0, content.length - 64);
      messages.push(assistant, { role: "user", content: [{ type: "tool_result", tool_use_id: id, content }] });
      size += a + JSON.stringify(messages.at(-1)).length + 1;
    }
    this.prefix = head + messages.map((m) => JSON.stringify(m)).join(",");
    this.messageCount = messages.length;
  }

  /** The request body with `extra` short exchanges after the history. */
  body(extra) {
    let tail = "";
    for (let k = 1; k <= extra; k++) tail += "," + JSON.stringify(shortAssistant()) + "," + JSON.stringify(userText(`next step ${k}`));
    return this.prefix + tail + "]}";
  }
}
