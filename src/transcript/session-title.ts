/**
 * The session's title, when the mirror saw Claude Code ask for one. Pure.
 *
 * Claude Code 2.1.328 names a session with a side request of its own: the user message opens with the
 * session's text inside `<session>…</session>` and the answer is JSON `{"title": "…"}` (structured
 * output). It keeps the name in its transcript as an `ai-title` record, which `claude --resume` lists the
 * session by. The mirror has that exchange under `side/`; the newest answer with a title wins.
 */
import { blocksOf, messageOf, parentOf, type Rec, uuidOf } from "./records.ts";

/** How Claude Code's title request begins. */
const TITLE_REQUEST = /^<session>\n/;

/** The title Claude Code was given for the session, from the side records, or null. */
export function sessionTitle(side: readonly Rec[]): string | null {
  const asks = new Set(side.filter((r) => r.type === "user" && firstText(r) !== null && TITLE_REQUEST.test(firstText(r)!)).map((r) => uuidOf(r)));
  let title: string | null = null;
  for (const r of side) {
    if (r.type !== "assistant" || !asks.has(parentOf(r))) continue;
    const text = blocksOf(messageOf(r)?.content).filter((b) => b.type === "text" && typeof b.text === "string").map((b) => b.text as string).join("");
    try {
      const parsed = JSON.parse(text) as unknown;
      const value = typeof parsed === "object" && parsed !== null ? (parsed as { title?: unknown }).title : undefined;
      if (typeof value === "string" && value.trim() !== "") title = value.trim();
    } catch {
      // not a JSON answer (cut short, refused): no title from it
    }
  }
  return title;
}

/** The record Claude Code keeps its generated title in. */
export function titleRecord(sessionId: string, title: string): Rec {
  return { type: "ai-title", aiTitle: title, sessionId };
}

/** The first text of a record's message, or null. */
function firstText(r: Rec): string | null {
  const text = blocksOf(messageOf(r)?.content).find((b) => b.type === "text" && typeof b.text === "string")?.text;
  return typeof text === "string" ? text : null;
}
