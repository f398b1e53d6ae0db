/**
 * A tool call in one line, as a person scanning a conversation wants it: `Bash: ls -la`,
 * `Read: src/main.ts`, `Grep: TODO in src`. Claude Code's own tools get the field that says what the call
 * did; any other tool its first text field, else its input as compact JSON. Pure.
 */
import { scrubControl } from "./control-chars.ts";
import { oneLine } from "./records.ts";
import { compactJson } from "./json-text.ts";
import { isObject } from "../protocol/json.ts";
import { plural } from "../utils/plural.ts";

/** Longest one-line tool call, in characters. */
const MAX = 160;

/** The string value of `input[key]`, or null. */
function str(input: Record<string, unknown>, key: string): string | null {
  const v = input[key];
  return typeof v === "string" && v.trim() !== "" ? v : null;
}

/** What the call of `name` with `input` did, in a few words (without the tool's name). */
function what(name: string, input: Record<string, unknown>): string {
  const path = str(input, "file_path") ?? str(input, "notebook_path") ?? str(input, "path");
  const where = (s: string) => (str(input, "path") !== null && s !== str(input, "path") ? `${s} in ${str(input, "path")}` : s);
  switch (name) {
    case "Bash":
      return str(input, "command") ?? "";
    case "Read":
    case "Edit":
    case "MultiEdit":
    case "NotebookEdit":
      return path ?? "";
    case "Write": {
      const content = str(input, "content");
      return `${path ?? ""}${content === null ? "" : ` (${content.split("\n").length} lines)`}`;
    }
    case "Glob":
    case "Grep":
      return where(str(input, "pattern") ?? "");
    case "WebFetch":
      return str(input, "url") ?? "";
    case "WebSearch":
    case "ToolSearch":
      return str(input, "query") ?? "";
    case "Task":
    case "Agent": {
      const kind = str(input, "subagent_type");
      return `${str(input, "description") ?? str(input, "prompt") ?? ""}${kind === null ? "" : ` (${kind})`}`;
    }
    case "TodoWrite":
      return Array.isArray(input.todos) ? `${plural(input.todos.length, "todo")}` : "";
    case "Skill":
      return str(input, "skill") ?? "";
  }
  for (const v of Object.values(input)) if (typeof v === "string" && v.trim() !== "") return v;
  return Object.keys(input).length === 0 ? "" : compactJson(input);
}

/** `Name: what it did`, one line of at most 160 characters, control characters removed. */
export function toolLine(name: unknown, input: unknown): string {
  const tool = typeof name === "string" && name !== "" ? oneLine(scrubControl(name), MAX) : "tool";
  const detail = oneLine(scrubControl(what(tool, isObject(input) ? input : {})), MAX - tool.length - 2);
  return detail === "" ? tool : `${tool}: ${detail}`;
}
