/**
 * Whether a request body looks like a conversation: a JSON object with a `messages` array
 * (docs/DESIGN.md "Nothing forwarded unseen"). Parsed whole, as the engine reads every request body (docs/DESIGN.md
 * "Request side"). Pure.
 */
import { isObject } from "../json.ts";

/** True when `bytes` is a JSON object whose top-level `messages` member is an array. */
export function looksLikeConversation(bytes: Uint8Array): boolean {
  try {
    const body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) as unknown;
    return isObject(body) && Array.isArray(body.messages);
  } catch {
    return false; // not UTF-8, or not JSON: not a conversation
  }
}
