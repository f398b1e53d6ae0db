// Reading records back for people: what a record is and says, in one line where it must, without a character a terminal acts on. Pure.
// Handles the mirror's records (one per API message) and Claude Code's own (one per content block, metadata in between).
import { COMPACTION_PREFIX } from "../protocol/classify.ts";
import { isObject } from "../protocol/json.ts";
import { bytesShort } from "../usage/tokens.ts";
import { compactJson } from "./json-text.ts";

/** One JSON object of a transcript or mirror file. */
export type Rec = Record<string, unknown>;
/** A content block (text, tool_use, tool_result, thinking, image, …), as stored. */
export type Block = Record<string, unknown>;

/** A user or assistant record: the conversation itself, what Claude Code can resume. */
export const isConversation = (r: Rec) => (r.type === "user" || r.type === "assistant") && isObject(r.message);
/** The mirror's record of a `role:"system"` API message (environment context, not conversation). */
export const isApiSystem = (r: Rec) => r.type === "system" && r.subtype === "api_message";
export const isCompactBoundary = (r: Rec) => r.type === "system" && r.subtype === "compact_boundary";
export const messageOf = (r: Rec): Record<string, unknown> | null => (isObject(r.message) ? r.message : null);
export const uuidOf = (r: Rec) => (typeof r.uuid === "string" && r.uuid !== "" ? r.uuid : null);
export const parentOf = (r: Rec) => (typeof r.parentUuid === "string" && r.parentUuid !== "" ? r.parentUuid : null);
/** ms since the epoch, or NaN. */
export const timeOf = (r: Rec) => (typeof r.timestamp === "string" ? Date.parse(r.timestamp) : Number.NaN);

/** A message's content as a block list (a plain string is one text block). */
export function blocksOf(content: unknown): Block[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content.filter(isObject) : [];
}

/** The user record carrying a compaction's summary (Claude Code's flag, or its opening words). */
export function isCompactSummary(r: Rec): boolean {
  if (r.type !== "user") return false;
  const first = blocksOf(messageOf(r)?.content).find((b) => b.type === "text");
  return r.isCompactSummary === true || (typeof first?.text === "string" && first.text.trimStart().startsWith(COMPACTION_PREFIX));
}

/** A user record of tool results only (the answer to a tool call, not a prompt). */
export function isToolResultOnly(r: Rec): boolean {
  const blocks = blocksOf(messageOf(r)?.content);
  return blocks.length > 0 && blocks.every((b) => b.type === "tool_result");
}

/** Claude Code's reminders and command wrappers: context it adds to a prompt, not what the user typed. */
const INJECTED = /^\s*<(system-reminder|local-command-caveat|local-command-stdout|command-name|command-message|command-args)>/;
export const isInjectedText = (text: string) => INJECTED.test(text);

/** The text a person typed into a user record: its text blocks, less Claude Code's injected context. */
export function promptText(r: Rec): string {
  return blocksOf(messageOf(r)?.content).filter((b) => b.type === "text" && typeof b.text === "string" && !INJECTED.test(b.text)).map((b) => b.text)
    .join("\n").trim();
}

/** A record a person typed: not a tool result, Claude Code's own (`isMeta`), or a compaction's summary. */
export const isTypedPrompt = (r: Rec) => r.type === "user" && r.isMeta !== true && !isToolResultOnly(r) && !isCompactSummary(r) && promptText(r) !== "";

/** The first prompt typed in `records`, one line of at most `max` characters: the title wherever no other is known. */
export function firstPrompt(records: Rec[], max = 200): string | null {
  const r = records.find(isTypedPrompt);
  return r === undefined ? null : oneLine(scrubControl(promptText(r)), max);
}

/** Whitespace collapsed to single spaces, cut at `max` characters with an ellipsis. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : flat.slice(0, max - 1) + "…";
}

/** Every searchable string of a record, less Claude Code's injected context (it repeats in every session). */
export function searchableText(r: Rec): string {
  const out: string[] = [];
  const walk = (blocks: Block[]) => {
    for (const b of blocks) {
      if (typeof b.text === "string" && !(b.type === "text" && INJECTED.test(b.text))) out.push(b.text);
      if (typeof b.thinking === "string") out.push(b.thinking);
      if (typeof b.name === "string") out.push(b.name);
      if (b.input !== undefined) out.push(compactJson(b.input));
      if (b.type === "tool_result") walk(blocksOf(b.content));
    }
  };
  walk(blocksOf(messageOf(r)?.content));
  if (typeof r.content === "string") out.push(r.content); // a system record's own text
  return out.join("\n");
}

/** `r` is a further block of `previous`'s assistant message (Claude Code writes one record per block). */
export function continuesMessage(previous: Rec | null, r: Rec): boolean {
  const id = previous === null ? null : messageOf(previous)?.id;
  return previous?.type === "assistant" && r.type === "assistant" && typeof id === "string" && id === messageOf(r)?.id;
}

/** A mirror record written before the tap wrote Claude Code's own `version` and left unknown fields out, read as today's (in place). */
export function upgradeOlderRecord(r: Rec): Rec {
  if (r.source !== "sessiontap") return r; // Claude Code's own records are read as they are
  const old = typeof r.version === "string" ? /^sessiontap\/(\S+)$/.exec(r.version) : null;
  if (old !== null) r.version = old[1];
  for (const key of ["cwd", "sessionId", "requestId"]) if (r[key] === null) delete r[key];
  return r;
}

/** How readers flag a record: rebuilt from a later request's history, or an answer cut short. */
export function recordFlags(r: Rec, short = false): string[] {
  const flags = [
    r.reconstructed === true ? (short ? "reconstructed" : "reconstructed from a later request") : "",
    messageOf(r)?.stop_reason === "interrupted" ? "interrupted" : "",
  ];
  return flags.filter(Boolean);
}

/** "Conversation compacted (auto, 12345 tokens before)". */
export function compactionText(r: Rec): string {
  const meta = isObject(r.compactMetadata) ? r.compactMetadata : {};
  const parts = [
    typeof meta.trigger === "string" ? scrubControl(meta.trigger) : "",
    typeof meta.preTokens === "number" ? `${meta.preTokens} tokens before` : "",
  ].filter(Boolean);
  return `Conversation compacted${parts.length > 0 ? ` (${parts.join(", ")})` : ""}`;
}

/** A reader's session: its directory (or store key) and its id when known. */
export interface NamedSession {
  dir: string;
  id: string | null;
}

/** Which session a `SESSION` argument names: an exact id or directory first, else a unique prefix of either (docs/DESIGN.md "Command line"). */
export function matchSession(
  named: NamedSession[],
  query: string,
): { kind: "none" } | { kind: "ambiguous"; candidates: string[] } | { kind: "found"; dir: string } {
  const exact = named.filter((n) => n.dir === query || n.id === query);
  const matches = exact.length > 0 ? exact : named.filter((n) => query !== "" && (n.dir.startsWith(query) || (n.id ?? "").startsWith(query)));
  if (matches.length === 0) return { kind: "none" };
  if (matches.length > 1) return { kind: "ambiguous", candidates: matches.map((m) => m.id ?? m.dir) };
  return { kind: "found", dir: matches[0].dir };
}

// deno-lint-ignore no-control-regex -- control characters are what these match
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;
/** C0 controls but tab and newline, DEL, C1, and the bidirectional controls that reorder what a line shows ("Trojan Source", CVE-2021-42574). */
// deno-lint-ignore no-control-regex -- as above
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
// deno-lint-ignore no-control-regex -- as above
const ANY_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

/** `text` without escape sequences or control characters (they restyle a terminal, and are garbage in Markdown or HTML); `\r` becomes `\n`. */
export function scrubControl(text: string): string {
  return ANY_CONTROL.test(text) ? text.replace(ANSI, "").replace(/\r\n?/g, "\n").replace(CONTROL, "") : text;
}

/** `text` for one line of a table or a report: scrubbed, every line break a space. */
export const scrubLine = (text: string) => scrubControl(text).replace(/[ \t]*\n[ \t]*/g, " ");

export const hasControl = (text: string) => ANY_CONTROL.test(text);

/** JSON text with what JSON.stringify leaves raw and a terminal acts on (DEL, C1, bidirectional controls) as `\u` escapes: the same value. */
export function terminalSafeJson(json: string): string {
  return json.replace(/[\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

const WRAPPER = /<([a-z][a-z0-9-]*)>([\s\S]*?)<\/\1>/g;

/** The wrappers of an injected text in order, each tag and what it holds (a text without any is one part with tag ""). */
export function injectedParts(text: string): { tag: string; inner: string }[] {
  const parts = [...text.matchAll(WRAPPER)].map((m) => ({ tag: m[1], inner: scrubControl(m[2]).trim() }));
  return parts.length > 0 ? parts : [{ tag: "", inner: scrubControl(text).trim() }];
}

const size = (text: string) => bytesShort(new TextEncoder().encode(text).length);

/** Claude Code's injected context in one line (readers show it instead of kilobytes repeated each turn): a command and its output, or a reminder's size and first words. */
export function injectedSummary(text: string): string {
  const parts = injectedParts(text);
  const byTag = new Map(parts.map((p) => [p.tag, p.inner]));
  const command = byTag.get("command-name");
  if (command !== undefined) return `command ${oneLine(`${command} ${byTag.get("command-args") ?? ""}`, 120)}`;
  const out = byTag.get("local-command-stdout") ?? byTag.get("local-command-stderr");
  if (out !== undefined) return out === "" ? "command output: (none)" : `command output: ${oneLine(out, 140)}`;
  if (byTag.has("local-command-caveat")) return "note: the messages below came from local commands";
  const label = parts[0].tag === "system-reminder" ? "reminder" : parts[0].tag === "" ? "context" : parts[0].tag.replace(/-/g, " ");
  return `${label} (${size(text)}): ${oneLine(parts[0].inner, 100)}`;
}

/** The environment block Claude Code sends each turn, in one line: its size, and the directory, branch and model it names. */
export function environmentSummary(raw: string): string {
  const text = scrubControl(raw);
  const cwd = /Primary working directory: *(.+)/.exec(text)?.[1] ?? /Working directory: *(.+)/.exec(text)?.[1];
  const branch = /(?:Current branch|gitBranch|Git branch): *(.+)/i.exec(text)?.[1];
  const model = /exact model ID is ([\w.\-[\]]*[\w\]])/.exec(text)?.[1];
  const facts = [cwd ? `cwd ${cwd.trim()}` : null, branch ? `branch ${branch.trim()}` : null, model ? `model ${model}` : null].filter(Boolean);
  return `environment from Claude Code (${size(text)}${facts.length > 0 ? `; ${facts.join(", ")}` : ""})`;
}

/** What an image or document block held (the mirror keeps no bytes): its media type and sha256. */
export function attachmentNote(b: Block): string {
  const s = isObject(b.source) ? b.source : {};
  const media = typeof s.media_type === "string" ? s.media_type : "unknown type";
  const note = s.type === "reference"
    ? `[${String(b.type)}: ${media}, sha256 ${String(s.sha256 ?? "?")}]`
    : s.type === "base64" && typeof s.data === "string"
    ? `[${String(b.type)}: ${media}, ${Math.floor((s.data.length * 3) / 4)} bytes inline]`
    : s.type === "url"
    ? `[${String(b.type)}: ${String(s.url)}]`
    : `[${String(b.type)}: ${media}]`;
  return scrubControl(note);
}

const str = (
  input: Record<string, unknown>,
  key: string,
) => (typeof input[key] === "string" && (input[key] as string).trim() !== "" ? input[key] as string : null);

/** What a call of Claude Code's tool `name` did, in a few words; any other tool's first text field, else its input. */
function toolWhat(name: string, input: Record<string, unknown>): string {
  const path = str(input, "file_path") ?? str(input, "notebook_path") ?? str(input, "path");
  const where = (s: string) => (str(input, "path") !== null && s !== str(input, "path") ? `${s} in ${str(input, "path")}` : s);
  switch (name) {
    case "Bash":
      return str(input, "command") ?? "";
    case "Read":
    case "Edit":
    case "MultiEdit":
    case "NotebookEdit":
      return path ?? "";
    case "Write": {
      const content = str(input, "content");
      return `${path ?? ""}${content === null ? "" : ` (${content.split("\n").length} lines)`}`;
    }
    case "Glob":
    case "Grep":
      return where(str(input, "pattern") ?? "");
    case "WebFetch":
      return str(input, "url") ?? "";
    case "WebSearch":
    case "ToolSearch":
      return str(input, "query") ?? "";
    case "Task":
    case "Agent": {
      const kind = str(input, "subagent_type");
      return `${str(input, "description") ?? str(input, "prompt") ?? ""}${kind === null ? "" : ` (${kind})`}`;
    }
    case "TodoWrite":
      return Array.isArray(input.todos) ? `${input.todos.length} todo${input.todos.length === 1 ? "" : "s"}` : "";
    case "Skill":
      return str(input, "skill") ?? "";
  }
  for (const v of Object.values(input)) if (typeof v === "string" && v.trim() !== "") return v;
  return Object.keys(input).length === 0 ? "" : compactJson(input);
}

/** A tool call in one line of at most 160 characters: `Bash: ls -la`, `Read: src/main.ts`, `Grep: TODO in src`. */
export function toolLine(name: unknown, input: unknown): string {
  const tool = typeof name === "string" && name !== "" ? oneLine(scrubControl(name), 160) : "tool";
  const detail = oneLine(scrubControl(toolWhat(tool, isObject(input) ? input : {})), 160 - tool.length - 2);
  return detail === "" ? tool : `${tool}: ${detail}`;
}
