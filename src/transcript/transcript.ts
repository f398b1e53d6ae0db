/**
 * How Claude Code's own transcript of a session looks (docs/DESIGN.md "Command line": `list --json`). Pure.
 *
 * - "missing": no file;
 * - "stub": a file without a single user or assistant record — empty, or only metadata records
 *   (`queue-operation`, `mode`, `last-prompt`, `cost-state`, …), which is what the stub-rewrite failure
 *   leaves behind; Claude Code cannot resume from it;
 * - "intact": at least one user or assistant record.
 */
import { isConversation } from "./records.ts";
import { parseJsonl } from "../protocol/json.ts";

/** The state of Claude Code's transcript for a session. */
export type TranscriptState = "intact" | "stub" | "missing";

/** Classifies a transcript from its text (null when the file does not exist). */
export function classifyTranscript(text: string | null): TranscriptState {
  if (text === null) return "missing";
  return parseJsonl(text).records.some(isConversation) ? "intact" : "stub";
}

/** The session ids a transcript file name can carry: Claude Code names them `<session>.jsonl`. */
export function sessionOfTranscriptName(name: string): string | null {
  return name.endsWith(".jsonl") && name.length > 6 ? name.slice(0, -6) : null;
}

/** True when the text's last line is unfinished or not a JSON object (a record cut off mid-write). */
export function tornLastLine(text: string): boolean {
  if (text === "") return false;
  if (!text.endsWith("\n")) return true;
  const last = text.slice(0, -1).split("\n").at(-1) ?? "";
  if (last.trim() === "") return false;
  try {
    const value = JSON.parse(last) as unknown;
    return typeof value !== "object" || value === null || Array.isArray(value);
  } catch {
    return true;
  }
}
