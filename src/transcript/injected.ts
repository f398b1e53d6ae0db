/**
 * What Claude Code adds to a conversation besides what the user typed, said in one line: its reminders
 * (`<system-reminder>`), the wrappers of a slash command and its output (`<command-name>`,
 * `<local-command-stdout>`, …), and the environment block it sends as a `role:"system"` message every turn.
 * Readers show this line instead of kilobytes of context repeated each turn. Pure.
 */
import { scrubControl } from "./control-chars.ts";
import { oneLine } from "./records.ts";
import { bytesShort } from "../usage/tokens.ts";

/** One wrapper of an injected text: its tag name and what it holds. */
export interface InjectedPart {
  tag: string;
  inner: string;
}

const WRAPPER = /<([a-z][a-z0-9-]*)>([\s\S]*?)<\/\1>/g;

/** The wrappers of an injected text, in order (a text without any is one part with tag ""). */
export function injectedParts(text: string): InjectedPart[] {
  const parts = [...text.matchAll(WRAPPER)].map((m) => ({ tag: m[1], inner: scrubControl(m[2]).trim() }));
  return parts.length > 0 ? parts : [{ tag: "", inner: scrubControl(text).trim() }];
}

/** A text's size in UTF-8, for people. */
function size(text: string): string {
  return bytesShort(new TextEncoder().encode(text).length);
}

/** An injected text in one line: the slash command and its output, or the reminder's size and first words. */
export function injectedSummary(text: string): string {
  const parts = injectedParts(text);
  const byTag = new Map(parts.map((p) => [p.tag, p.inner]));
  const command = byTag.get("command-name");
  if (command !== undefined) {
    const args = byTag.get("command-args") ?? "";
    return `command ${oneLine(`${command} ${args}`, 120)}`;
  }
  const out = byTag.get("local-command-stdout") ?? byTag.get("local-command-stderr");
  if (out !== undefined) return out === "" ? "command output: (none)" : `command output: ${oneLine(out, 140)}`;
  if (byTag.has("local-command-caveat")) return "note: the messages below came from local commands";
  const first = parts[0];
  const label = first.tag === "system-reminder" ? "reminder" : first.tag === "" ? "context" : first.tag.replace(/-/g, " ");
  return `${label} (${size(text)}): ${oneLine(first.inner, 100)}`;
}

/** The environment block in one line: its size, and the working directory and platform when it names them. */
export function environmentSummary(raw: string): string {
  const text = scrubControl(raw);
  const cwd = /Primary working directory: *(.+)/.exec(text)?.[1] ?? /Working directory: *(.+)/.exec(text)?.[1];
  const branch = /(?:Current branch|gitBranch|Git branch): *(.+)/i.exec(text)?.[1];
  const model = /exact model ID is ([\w.\-[\]]*[\w\]])/.exec(text)?.[1];
  const facts = [cwd ? `cwd ${cwd.trim()}` : null, branch ? `branch ${branch.trim()}` : null, model ? `model ${model}` : null].filter(Boolean);
  return `environment from Claude Code (${size(text)}${facts.length > 0 ? `; ${facts.join(", ")}` : ""})`;
}
