/**
 * A mirrored tool-result message as Claude Code records it: one user record per result, each with the
 * `toolUseResult` its screen shows the output from. Pure.
 *
 * The wire carries the result the model read (`tool_result`); Claude Code keeps beside it what the tool
 * returned (`toolUseResult`), and draws a resumed conversation's tool output from that alone: without it a
 * `● Bash(echo hi)` has no `⎿ hi` under it. Where a tool's result says all its output holds, it is
 * derived from the `tool_result` (checked with the real CLI, 2.1.328 and 2.1.332); other tools are
 * written without one, as their call alone (docs/DESIGN.md "Restore").
 */
import { isObject } from "../protocol/json.ts";
import type { Block } from "./records.ts";

/** A tool call the conversation made: its name and input, by `tool_use` id. */
export interface ToolUse {
  name: string;
  input: unknown;
}

/** The text of a tool result's content (a string, or its text blocks); null when it holds anything else. */
function resultText(content: unknown): string | null {
  if (typeof content === "string") return content;
  if (!Array.isArray(content) || !content.every((b) => isObject(b) && b.type === "text" && typeof b.text === "string")) return null;
  return content.map((b) => (b as Block).text as string).join("\n");
}

/** What Claude Code keeps as the tool's own result, where the `tool_result` says all of it; else undefined. */
export function toolUseResultOf(use: ToolUse | undefined, result: Block): unknown {
  if (use === undefined || result.is_error === true) return undefined;
  const text = resultText(result.content);
  if (text === null) return undefined;
  switch (use.name) {
    case "Bash": // stdout and stderr arrive merged, as the model read them
      return { stdout: text, stderr: "", interrupted: false, isImage: false, noOutputExpected: false };
    default:
      return undefined;
  }
}
