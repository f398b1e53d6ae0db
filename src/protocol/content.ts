// What of a message's content the mirror keeps (docs/DESIGN.md "The mirror"): base64 sources become sha256 references,
// `cache_control` markers go, thinking goes when the user opted out. Pure.
import { createHash } from "node:crypto";
import { isObject, type Json } from "./json.ts";

export const THINKING_TYPES = new Set(["thinking", "redacted_thinking"]);

function referenceFor(source: Json): Json {
  const data = typeof source.data === "string" ? source.data : "";
  const digest = createHash("sha256").update(Buffer.from(data, "base64")).digest("hex");
  return { type: "reference", sha256: digest, media_type: source.media_type ?? null };
}

/** Recurses into tool results, whose content can hold images too. */
function scrubBlock(block: Json, includeThinking: boolean): Json | null {
  if (!includeThinking && THINKING_TYPES.has(String(block.type))) return null;
  let out = block;
  if ("cache_control" in block) {
    // Claude Code's transcript never stores it, and restoring it would send more breakpoints than the API accepts.
    const { cache_control: _marker, ...rest } = block;
    out = rest;
  }
  if (isObject(block.source) && block.source.type === "base64") out = { ...out, source: referenceFor(block.source) };
  if (Array.isArray(block.content)) out = { ...out, content: scrubContent(block.content, includeThinking) };
  return out;
}

export function scrubContent<T>(content: T, includeThinking: boolean): T {
  if (!Array.isArray(content)) return content;
  const out: unknown[] = [];
  for (const block of content) {
    if (!isObject(block)) {
      out.push(block);
      continue;
    }
    const kept = scrubBlock(block, includeThinking);
    if (kept !== null) out.push(kept);
  }
  return out as T;
}
