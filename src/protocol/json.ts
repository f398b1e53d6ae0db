// JSON off the wire, and JSON Lines as every file the tap writes or reads holds them. Pure.

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function jsonObject(line: string): Json | null {
  try {
    const value = JSON.parse(line) as unknown;
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

export type Parsed = { records: Json[]; malformed: number };

/** Blank lines skipped; a line torn by a crash, or foreign, is counted, never thrown. */
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

/** The lines of `text` that end in a newline: a last line without one was torn mid-append. */
export function completeLines(text: string): string[] {
  return text.slice(0, text.lastIndexOf("\n") + 1).split("\n").slice(0, -1);
}
