/**
 * One line of Claude Code's transcript, as the guard reads it: whether it is conversation (a user or
 * assistant record) and which prompt keys it holds. Pure. Only lines that can hold a prompt are parsed;
 * the rest (answers, tool results, large attachments such as prompt snapshots) are recognised by their
 * `"type":"…"` pair, which JSON text can only carry unescaped as a key and value, never inside a string.
 */
import { transcriptPromptKeys } from "./prompts.ts";
import { isObject, jsonObject } from "../protocol/json.ts";

const decoder = new TextDecoder();

/** What one line tells; null for a line that is not a JSON object (torn, foreign). */
export function parseLine(bytes: Uint8Array): { conversation: boolean; keys: string[] } | null {
  const text = decoder.decode(bytes);
  const user = text.includes('"type":"user"');
  const assistant = !user && text.includes('"type":"assistant"');
  const maybePrompt = user || text.includes('"type":"queue-operation"') || text.includes('"queued_command"');
  if (!maybePrompt) {
    if (!assistant) return { conversation: false, keys: [] };
    return validObject(text) ? { conversation: true, keys: [] } : null;
  }
  const value = jsonObject(text);
  if (value === null) return null;
  const conversation = (value.type === "user" || value.type === "assistant") && isObject(value.message);
  return { conversation, keys: transcriptPromptKeys(value) };
}

/** A cheap check that an answer line is a whole JSON object (a torn line is not conversation). */
function validObject(text: string): boolean {
  const t = text.trim();
  return t.startsWith("{") && t.endsWith("}");
}
