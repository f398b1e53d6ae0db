/** Reads the real Claude Code captures kept in test/fixtures/claude-code. */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Rec } from "./claude.ts";

const DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "claude-code");

/** One request as captured: method, url, headers, parsed body. */
export interface CapturedRequest {
  n: number;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: { messages: { role: string; content: unknown }[]; system?: unknown; [k: string]: unknown };
}

/** The requests of a capture, bodies parsed. */
export function capturedRequests(capture: string): CapturedRequest[] {
  return readFileSync(join(DIR, capture, "requests.jsonl"), "utf8").trim().split("\n").map((line) => {
    const r = JSON.parse(line);
    return { ...r, body: typeof r.body === "string" ? JSON.parse(r.body) : r.body };
  });
}

/** The transcript Claude Code wrote for a capture. */
export function capturedTranscript(capture: string): Rec[] {
  return readFileSync(join(DIR, capture, "transcript.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
}
