// What a record is and says, read back for people without a character a terminal acts on, and JSON text safe at any depth; the
// mirror's records and Claude Code's alike (docs/DESIGN.md "Readable by other tools"). Pure.
import { COMPACTION_PREFIX } from "../protocol/classify.ts";
import { isObject } from "../protocol/json.ts";
import { bytesShort } from "../usage/tokens.ts";
import { plural } from "../utils/describe-error.ts";

export type Rec = Record<string, unknown>;
export type Block = Record<string, unknown>;

export const isConversation = (r: Rec) => (r.type === "user" || r.type === "assistant") && isObject(r.message);
export const isApiSystem = (r: Rec) => r.type === "system" && r.subtype === "api_message";
export const isCompactBoundary = (r: Rec) => r.type === "system" && r.subtype === "compact_boundary";
export const messageOf = (r: Rec): Record<string, unknown> | null => (isObject(r.message) ? r.message : null);
export const uuidOf = (r: Rec) => (typeof r.uuid === "string" && r.uuid !== "" ? r.uuid : null);
export const parentOf = (r: Rec) => (typeof r.parentUuid === "string" && r.parentUuid !== "" ? r.parentUuid : null);
export const timeOf = (r: Rec) => (typeof r.timestamp === "string" ? Date.parse(r.timestamp) : Number.NaN);

export function blocksOf(content: unknown): Block[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content.filter(isObject) : [];
}

export function isCompactSummary(r: Rec): boolean {
  if (r.type !== "user") return false;
  const first = blocksOf(messageOf(r)?.content).find((b) => b.type === "text");
  return r.isCompactSummary === true || (typeof first?.text === "string" && first.text.trimStart().startsWith(COMPACTION_PREFIX));
}

export function isToolResultOnly(r: Rec): boolean {
  const blocks = blocksOf(messageOf(r)?.content);
  return blocks.length > 0 && blocks.every((b) => b.type === "tool_result");
}

const INJECTED = /^\s*<(system-reminder|local-command-caveat|local-command-stdout|command-name|command-message|command-args)>/;
export const isInjectedText = (text: string) => INJECTED.test(text);

export function promptText(r: Rec): string {
  return blocksOf(messageOf(r)?.content).filter((b) => b.type === "text" && typeof b.text === "string" && !INJECTED.test(b.text)).map((b) => b.text)
    .join("\n").trim();
}

export const isTypedPrompt = (r: Rec) => r.type === "user" && r.isMeta !== true && !isToolResultOnly(r) && !isCompactSummary(r) && promptText(r) !== "";

export function firstPrompt(records: Rec[], max = 200): string | null {
  const r = records.find(isTypedPrompt);
  return r === undefined ? null : oneLine(scrubControl(promptText(r)), max);
}

export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : flat.slice(0, max - 1) + "…";
}

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
  if (typeof r.content === "string") out.push(r.content);
  return out.join("\n");
}

export function continuesMessage(previous: Rec | null, r: Rec): boolean {
  const id = previous === null ? null : messageOf(previous)?.id;
  return previous?.type === "assistant" && r.type === "assistant" && typeof id === "string" && id === messageOf(r)?.id;
}

/** A mirror record written before the tap wrote Claude Code's own `version` and left unknown fields out, read as today's (in place). */
export function upgradeOlderRecord(r: Rec): Rec {
  if (r.source !== "sessiontap") return r;
  const old = typeof r.version === "string" ? /^sessiontap\/(\S+)$/.exec(r.version) : null;
  if (old !== null) r.version = old[1];
  for (const key of ["cwd", "sessionId", "requestId"]) if (r[key] === null) delete r[key];
  return r;
}

export function recordFlags(r: Rec, short = false): string[] {
  const reconstructed = r.reconstructed === true ? [short ? "reconstructed" : "reconstructed from a later request"] : [];
  return messageOf(r)?.stop_reason === "interrupted" ? [...reconstructed, "interrupted"] : reconstructed;
}

export function compactionText(r: Rec): string {
  const meta = isObject(r.compactMetadata) ? r.compactMetadata : {};
  const parts = [
    typeof meta.trigger === "string" ? scrubControl(meta.trigger) : "",
    typeof meta.preTokens === "number" ? `${meta.preTokens} tokens before` : "",
  ].filter(Boolean);
  return `Conversation compacted${parts.length > 0 ? ` (${parts.join(", ")})` : ""}`;
}

export type NamedSession = { dir: string; id: string | null };

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
const ANY_CONTROL = new RegExp(CONTROL.source);

/** Escape sequences and control characters restyle a terminal and are garbage in Markdown or HTML; `\r` becomes `\n`. */
export function scrubControl(text: string): string {
  return ANY_CONTROL.test(text) ? text.replace(ANSI, "").replace(/\r\n?/g, "\n").replace(CONTROL, "") : text;
}

export const scrubLine = (text: string) => scrubControl(text).replace(/[ \t]*\n[ \t]*/g, " ");

export const hasControl = (text: string) => ANY_CONTROL.test(text);

/** JSON text with what JSON.stringify leaves raw and a terminal acts on (DEL, C1, bidirectional controls) as `\u` escapes: the same value. */
export function terminalSafeJson(json: string): string {
  return json.replace(/[\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

export function injectedParts(text: string): { tag: string; inner: string }[] {
  const parts = [...text.matchAll(/<([a-z][a-z0-9-]*)>([\s\S]*?)<\/\1>/g)].map((m) => ({ tag: m[1], inner: scrubControl(m[2]).trim() }));
  return parts.length > 0 ? parts : [{ tag: "", inner: scrubControl(text).trim() }];
}

const size = (text: string) => bytesShort(new TextEncoder().encode(text).length);

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

export function environmentSummary(raw: string): string {
  const text = scrubControl(raw);
  const cwd = /Primary working directory: *(.+)/.exec(text)?.[1] ?? /Working directory: *(.+)/.exec(text)?.[1];
  const branch = /(?:Current branch|gitBranch|Git branch): *(.+)/i.exec(text)?.[1];
  const model = /exact model ID is ([\w.\-[\]]*[\w\]])/.exec(text)?.[1];
  const facts = [cwd ? `cwd ${cwd.trim()}` : null, branch ? `branch ${branch.trim()}` : null, model ? `model ${model}` : null].filter(Boolean);
  return `environment from Claude Code (${size(text)}${facts.length > 0 ? `; ${facts.join(", ")}` : ""})`;
}

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

const ONE_FIELD: Record<string, string> = { Bash: "command", WebFetch: "url", WebSearch: "query", ToolSearch: "query", Skill: "skill" };

function toolWhat(name: string, input: Record<string, unknown>): string {
  const str = (key: string) => (typeof input[key] === "string" && (input[key] as string).trim() !== "" ? input[key] as string : null);
  const path = str("file_path") ?? str("notebook_path") ?? str("path");
  const pattern = str("pattern") ?? "";
  if (Object.hasOwn(ONE_FIELD, name)) return str(ONE_FIELD[name]) ?? "";
  if (["Read", "Edit", "MultiEdit", "NotebookEdit"].includes(name)) return path ?? "";
  if (name === "Write") return `${path ?? ""}${str("content") === null ? "" : ` (${str("content")!.split("\n").length} lines)`}`;
  if (name === "Glob" || name === "Grep") return str("path") !== null && pattern !== str("path") ? `${pattern} in ${str("path")}` : pattern;
  if (name === "Task" || name === "Agent") {
    return `${str("description") ?? str("prompt") ?? ""}${str("subagent_type") === null ? "" : ` (${str("subagent_type")})`}`;
  }
  if (name === "TodoWrite") return Array.isArray(input.todos) ? plural(input.todos.length, "todo") : "";
  for (const v of Object.values(input)) if (typeof v === "string" && v.trim() !== "") return v;
  return Object.keys(input).length === 0 ? "" : compactJson(input);
}

export function toolLine(name: unknown, input: unknown): string {
  const tool = typeof name === "string" && name !== "" ? oneLine(scrubControl(name), 160) : "tool";
  const detail = oneLine(scrubControl(toolWhat(tool, isObject(input) ? input : {})), 160 - tool.length - 2);
  return detail === "" ? tool : `${tool}: ${detail}`;
}

const omitted = (v: unknown) => v === undefined || typeof v === "function" || typeof v === "symbol";

/** At any depth: `JSON.stringify` overflowed the stack on a tool input nested 20,000 levels deep. */
export function compactJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
  }
  const out: string[] = [];
  const stack: { keys: string[] | null; values: unknown[]; next: number }[] = [];
  const open = (v: unknown): void => {
    if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") v = (v as { toJSON(): unknown }).toJSON();
    if (Array.isArray(v)) {
      out.push("[");
      stack.push({ keys: null, values: v, next: 0 });
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v).filter((k) => !omitted((v as Record<string, unknown>)[k]));
      out.push("{");
      stack.push({ keys, values: keys.map((k) => (v as Record<string, unknown>)[k]), next: 0 });
    } else if (typeof v === "number") out.push(Number.isFinite(v) ? String(v) : "null");
    else out.push(omitted(v) ? "null" : typeof v === "string" ? JSON.stringify(v) : String(v));
  };
  open(value);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    if (frame.next === frame.values.length) {
      stack.pop();
      out.push(frame.keys === null ? "]" : "}");
      continue;
    }
    const i = frame.next++;
    if (i > 0) out.push(",");
    if (frame.keys !== null) out.push(JSON.stringify(frame.keys[i]) + ":");
    open(frame.values[i]);
  }
  return out.join("");
}

/** `JSON.stringify(value, null, 2)` for `levels` levels, compact below: a value 20,000 deep wrote 800 MB of spaces (docs/RELIABILITY.md "Trust boundaries"). */
export function jsonText(value: unknown, levels = 12): string {
  const compact = compactJson(value);
  if (levels <= 0) return compact;
  const pads = Array.from({ length: levels + 1 }, (_, d) => "\n" + "  ".repeat(d));
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < compact.length; i++) {
    const c = compact.charCodeAt(i);
    if (c === 34) {
      for (i++; i < compact.length && compact.charCodeAt(i) !== 34; i++) if (compact.charCodeAt(i) === 92) i++;
    } else if (c === 123 || c === 91) {
      const next = compact.charCodeAt(i + 1);
      if (next === 125 || next === 93) i++; // an empty container stays "{}" / "[]"
      else if (++depth <= levels) {
        out.push(compact.slice(start, i + 1), pads[depth]);
        start = i + 1;
      }
    } else if (c === 125 || c === 93) {
      if (depth <= levels) {
        out.push(compact.slice(start, i), pads[depth - 1]);
        start = i;
      }
      depth--;
    } else if (depth <= levels && (c === 44 || c === 58)) {
      out.push(compact.slice(start, i + 1), c === 44 ? pads[depth] : " ");
      start = i + 1;
    }
  }
  out.push(compact.slice(start));
  return out.join("");
}
