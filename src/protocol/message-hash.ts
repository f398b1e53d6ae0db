// A message's identity, stable across what Claude Code changes between re-sends, and what of its content the mirror keeps
// (docs/DESIGN.md "Exactly once"). Pure.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { isObject, type Json } from "./json.ts";

const THINKING_TYPES = new Set(["thinking", "redacted_thinking"]);
// Cache markers move between re-sends; a signature is re-made when thinking is cleared.
const IGNORED_KEYS = new Set(["cache_control", "signature"]);

function referenceFor(source: Json): Json {
  const data = typeof source.data === "string" ? source.data : "";
  const digest = createHash("sha256").update(Buffer.from(data, "base64")).digest("hex");
  return { type: "reference", sha256: digest, media_type: source.media_type ?? null };
}

function scrubBlock(block: Json, includeThinking: boolean): Json[] {
  if (!includeThinking && THINKING_TYPES.has(String(block.type))) return [];
  // Claude Code's transcript never stores `cache_control`, and restoring it would send more breakpoints than the API accepts.
  const { cache_control: _marker, ...out } = block as Json & { cache_control?: unknown };
  if (isObject(block.source) && block.source.type === "base64") out.source = referenceFor(block.source);
  if (Array.isArray(block.content)) out.content = scrubContent(block.content, includeThinking); // tool results hold images too
  return [out];
}

/** Base64 sources become sha256 references, `cache_control` markers go, and thinking unless `includeThinking`. */
export function scrubContent<T>(content: T, includeThinking: boolean): T {
  if (!Array.isArray(content)) return content;
  return content.flatMap((block) => (isObject(block) ? scrubBlock(block, includeThinking) : [block])) as T;
}

function canonicalBlock(block: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(block)) {
    if (IGNORED_KEYS.has(key) || key.startsWith("sessiontap_") || (key === "is_error" && value === false)) continue;
    out[key] = key === "content" ? canonicalContent(value) : value;
  }
  return out;
}

// A string and a single text block mean the same; thinking is not part of identity (it is cleared and re-signed).
function canonicalContent(content: unknown): unknown {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return content;
  return content.filter((b) => !(isObject(b) && THINKING_TYPES.has(String(b.type)))).map((b) => (isObject(b) ? canonicalBlock(b) : b));
}

function sortKeys(_key: string, value: unknown): unknown {
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, value[key]]));
}

/** JSON with object keys sorted; past the depth a replacer allows (~1,500 on Deno), as sent, which is how Claude Code re-sends it. */
export function stableStringify(value: unknown): string {
  try {
    return JSON.stringify(value, sortKeys) ?? "null";
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return JSON.stringify(value) ?? "null";
  }
}

export function messageHash(role: unknown, content: unknown): string {
  return createHash("sha256").update(stableStringify([role, canonicalContent(scrubContent(content, true))]), "utf8").digest("hex");
}

export function chainHash(parent: string | null, message: string): string {
  return createHash("sha256").update((parent ?? "root") + ":" + message, "utf8").digest("hex");
}

/** A deterministic UUID-shaped id (8-4-4-4-12 hex) from any seed; not RFC-versioned. */
export function uuidFrom(seed: string): string {
  const h = createHash("sha256").update(seed, "utf8").digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
