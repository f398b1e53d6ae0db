/**
 * A session's title: the one Claude Code generated, else the first prompt. Claude Code asks the model for
 * a title in a side request and gets it back as JSON (`{"title": "…"}`, 2.x; 1.x answered
 * `{"isNewTopic": …, "title": …}`); the tap mirrors that exchange into `side/`, so the newest such answer
 * there is the title Claude Code shows. Pure.
 */
import { scrubControl } from "./control-chars.ts";
import { blocksOf, firstPrompt, messageOf, oneLine, type Rec } from "./records.ts";
import { isObject } from "../protocol/json.ts";

/** Longest title shown, in characters (a list row, a page heading). */
export const TITLE_MAX = 100;

/** The title an answer carries: its text parsed as JSON (bare, or in a code fence) with a non-empty string `title`. */
export function titleFromAnswer(r: Rec): string | null {
  if (r.type !== "assistant") return null;
  const text = blocksOf(messageOf(r)?.content)
    .filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join("")
    .trim()
    .replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/, "$1");
  if (!text.startsWith("{")) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObject(value) || typeof value.title !== "string") return null;
  const title = oneLine(scrubControl(value.title), TITLE_MAX);
  return title === "" ? null : title;
}

/** The newest title Claude Code generated among a session's side records (file order is time order), or null. */
export function generatedTitle(side: Rec[]): string | null {
  for (let i = side.length - 1; i >= 0; i--) {
    const title = titleFromAnswer(side[i]);
    if (title !== null) return title;
  }
  return null;
}

/** The title to show: Claude Code's generated one, else the first prompt (one line), else null. */
export function sessionTitle(side: Rec[], records: Rec[]): string | null {
  return generatedTitle(side) ?? firstPrompt(records, TITLE_MAX);
}
