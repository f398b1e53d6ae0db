/**
 * Whether a request body looks like a conversation: a JSON object with a `messages` array
 * (docs/DESIGN.md "Nothing forwarded unseen"). Found with the scanner, without parsing the body. Pure.
 */
import { memberValue } from "../json-scan.ts";

const OPEN_BRACKET = 0x5b;

/** True when `bytes` is a JSON object whose top-level `messages` member is an array. */
export function looksLikeConversation(bytes: Uint8Array): boolean {
  const span = memberValue(bytes, "messages");
  return span !== null && bytes[span[0]] === OPEN_BRACKET;
}
