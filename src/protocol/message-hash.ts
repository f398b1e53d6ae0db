/**
 * Message identity: a canonical hash that survives what Claude Code changes between re-sends without
 * changing meaning, and a chain hash that identifies a message by its position in a conversation. Pure.
 */
import { createHash } from "node:crypto";
import { scrubContent, THINKING_TYPES } from "./content.ts";
import { isObject, type Json } from "./json.ts";

/** Keys that move or vanish between re-sends of the same message (cache markers, stream bookkeeping). */
const IGNORED_KEYS = new Set(["cache_control", "signature"]);

/** Normalises one block: drops volatile keys, a plain `is_error:false`, and turns string content into a text block. */
function canonicalBlock(block: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(block)) {
    if (IGNORED_KEYS.has(key) || key.startsWith("sessiontap_")) continue;
    if (key === "is_error" && value === false) continue;
    out[key] = key === "content" ? canonicalContent(value) : value;
  }
  return out;
}

/** A string and a single text block mean the same; thinking is not part of identity (it is cleared and re-signed). */
function canonicalContent(content: unknown): unknown {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return content;
  return content
    .filter((b) => !(isObject(b) && THINKING_TYPES.has(String(b.type))))
    .map((b) => (isObject(b) ? canonicalBlock(b) : b));
}

/** Returns a plain object's copy with its keys sorted (other values as they are). */
function sortKeys(_key: string, value: unknown): unknown {
  if (!isObject(value)) return value;
  const sorted: Json = {};
  for (const key of Object.keys(value).sort()) sorted[key] = value[key];
  return sorted;
}

/**
 * JSON with object keys sorted, so key order never changes a hash. The runtime's own JSON.stringify does
 * the walking. Past the depth a replacer allows (about 1,500 levels on Deno), the plain serialisation is
 * used: key order is then as sent, which is how Claude Code re-sends what it received.
 */
export function stableStringify(value: unknown): string {
  try {
    return JSON.stringify(value, sortKeys) ?? "null";
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return JSON.stringify(value) ?? "null";
  }
}

/** The canonical hash of a message (role + content), equal for a message and its re-sent copy. */
export function messageHash(role: unknown, content: unknown): string {
  const canonical = stableStringify([role, canonicalContent(scrubContent(content, true))]);
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}

/** The hash of a message at a position: its parent's chain hash and its own hash. */
export function chainHash(parent: string | null, message: string): string {
  return createHash("sha256").update((parent ?? "root") + ":" + message, "utf8").digest("hex");
}

/** A deterministic UUID-shaped id (8-4-4-4-12 hex) from any seed; not RFC-versioned, honestly synthetic. */
export function uuidFrom(seed: string): string {
  const h = createHash("sha256").update(seed, "utf8").digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
