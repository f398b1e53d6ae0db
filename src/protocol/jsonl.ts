/**
 * JSON Lines, as every file the tap writes or reads holds them (the mirror, its spools, Claude Code's
 * transcripts): one JSON object per line. A line that is not one — torn by a crash, or foreign — is
 * counted, never thrown; a last line without its newline is not complete. Pure.
 */
import { isObject, type Json } from "./json.ts";

/** Records read from JSONL text; lines that are not a JSON object are counted, not returned. */
export interface Parsed {
  records: Json[];
  malformed: number;
}

/** One line as a JSON object, or null when it is not one. */
export function jsonObject(line: string): Json | null {
  try {
    const value = JSON.parse(line) as unknown;
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * Parses JSONL text: one object per line, blank lines skipped, a torn or foreign line counted.
 * @example
 * parseJsonl('{"a":1}\nnot json\n\n{"b":2}'); // { records: [{ a: 1 }, { b: 2 }], malformed: 1 }
 */
export function parseJsonl(text: string): Parsed {
  const records: Json[] = [];
  let malformed = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const record = jsonObject(line);
    if (record === null) malformed++;
    else records.push(record);
  }
  return { records, malformed };
}

/** The complete lines of `text` (a last line without its newline — torn by a crash mid-append — is not one). */
export function completeLines(text: string): string[] {
  return text.slice(0, text.lastIndexOf("\n") + 1).split("\n").slice(0, -1);
}
