/**
 * A session's title: the one Claude Code generated, else the first prompt. Pure.
 *
 * Claude Code names a session with a side request of its own: the user message opens with the session's
 * text inside `<session>…</session>` and the answer is JSON `{"title": "…"}` (structured output). It keeps
 * the name in its transcript as an `ai-title` record, which `claude --resume` lists the session by. The
 * mirror has that exchange under `side/`; the newest answer to such a request is the title, and only such
 * an answer: another side request may answer JSON with a `title` too.
 */
import { scrubControl } from "./control-chars.ts";
import { blocksOf, firstPrompt, messageOf, oneLine, parentOf, type Rec, uuidOf } from "./records.ts";
import { isObject } from "../protocol/json.ts";

/** Longest title shown, in characters (a list row, a page heading). */
export const TITLE_MAX = 100;

/** How Claude Code's title request begins. */
const TITLE_REQUEST = /^<session>\n/;

/** The text blocks of a record's message, joined. */
function textOf(r: Rec): string {
  return blocksOf(messageOf(r)?.content).filter((b) => b.type === "text" && typeof b.text === "string").map((b) => b.text as string).join("");
}

/** The title an answer carries, trimmed: its text parsed as JSON (bare, or in a code fence) with a non-empty string `title`. */
export function titleFromAnswer(r: Rec): string | null {
  if (r.type !== "assistant") return null;
  const text = textOf(r).trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/, "$1");
  if (!text.startsWith("{")) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null; // not a JSON answer (cut short, refused): no title from it
  }
  return isObject(value) && typeof value.title === "string" && value.title.trim() !== "" ? value.title.trim() : null;
}

/** The newest title Claude Code generated among a session's side records (file order is time order), as it gave it, or null. */
export function generatedTitle(side: readonly Rec[]): string | null {
  const asks = new Set(side.filter((r) => r.type === "user" && TITLE_REQUEST.test(textOf(r))).map(uuidOf));
  for (let i = side.length - 1; i >= 0; i--) {
    const parent = parentOf(side[i]);
    const title = parent !== null && asks.has(parent) ? titleFromAnswer(side[i]) : null;
    if (title !== null) return title;
  }
  return null;
}

/** The title to show: Claude Code's generated one in one line without control characters, else the first prompt, else null. */
export function sessionTitle(side: readonly Rec[], records: Rec[]): string | null {
  const title = oneLine(scrubControl(generatedTitle(side) ?? ""), TITLE_MAX);
  return title !== "" ? title : firstPrompt(records, TITLE_MAX);
}

/** The record Claude Code keeps its generated title in. */
export function titleRecord(sessionId: string, title: string): Rec {
  return { type: "ai-title", aiTitle: title, sessionId };
}
