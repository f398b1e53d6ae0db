/**
 * What is wrong with a transcript, from what the guard has read of it and the prompts the mirror holds.
 * Pure. Prompts younger than `settleMs` are not judged (Claude Code may not have written them yet), nor
 * prompts noted before a file first read from its tail only (they may lie before the window).
 */
import type { GuardState } from "./alerts.ts";

/** What the guard knows of the file. */
export interface FileKnowledge {
  /** How the last look went. */
  kind: "read" | "missing" | "not-a-file";
  /** The file has existed at some point while watched. */
  seen: boolean;
  /** Read from its first byte. */
  fromStart: boolean;
  /** A user or assistant record was read. */
  conversation: boolean;
  /** When the current file was first read. */
  startedAt: number;
  keys: ReadonlySet<string>;
  /** Lines too long to read that may each hold a prompt. */
  oversizedPrompts: number;
}

/** A verdict: a bad state (with the count of prompts lacking, for "behind"), or null when nothing is wrong or nothing can be told. */
export type Verdict = { state: GuardState; lacking?: number } | null;

/** Judges a transcript. */
export function transcriptVerdict(file: FileKnowledge, prompts: Iterable<{ keys: string[]; seenAt: number }>, now: number, settleMs: number): Verdict {
  if (file.kind !== "read") return file.kind === "missing" && file.seen ? { state: "missing" } : null;
  if (file.fromStart && !file.conversation) return { state: "stub" };
  const judgeFrom = file.fromStart ? 0 : file.startedAt;
  let lacking = 0;
  for (const p of prompts) {
    if (now - p.seenAt < settleMs || p.seenAt < judgeFrom) continue;
    if (!p.keys.some((k) => file.keys.has(k))) lacking++;
  }
  lacking -= file.oversizedPrompts;
  return lacking > 0 ? { state: "behind", lacking } : null;
}
