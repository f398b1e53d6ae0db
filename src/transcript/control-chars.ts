// deno-lint-ignore-file no-control-regex -- matching control characters is this module's whole purpose
/**
 * Terminal control characters out of text meant for people. A record can hold them (Claude Code keeps the
 * ANSI styling of a local command's output, `/compact`'s "Compacted" line among them); printed raw they
 * restyle or move a reader's terminal, and in Markdown or HTML they are invisible garbage. The
 * bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069) go too: they
 * reorder what a line shows, so a cwd or a command can read as something else ("Trojan Source",
 * CVE-2021-42574). Pure.
 */

/** ANSI escape sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC \`), and two-character escapes. */
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;
/** C0 controls other than tab and newline, DEL, the C1 controls, and the bidirectional controls that reorder text. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
/** The same, to test for one. */
const ANY_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;
/** What JSON.stringify leaves raw that a terminal acts on: DEL, the C1 controls, the bidirectional controls. */
const RAW_IN_JSON = /[\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/** `text` without escape sequences or control characters; `\r\n` and a lone `\r` become `\n`; tabs and newlines stay. */
export function scrubControl(text: string): string {
  if (!ANY_CONTROL.test(text)) return text;
  return text.replace(ANSI, "").replace(/\r\n?/g, "\n").replace(CONTROL, "");
}

/** `text` for one line of a table or a report (a cwd, a title): scrubbed, and every line break a space. */
export function scrubLine(text: string): string {
  return scrubControl(text).replace(/[ \t]*\n[ \t]*/g, " ");
}

/**
 * JSON text with every character a terminal would act on written as a `\u` escape: the same JSON
 * value (JSON.stringify escapes C0 controls itself, and these can only stand inside strings), safe to print.
 */
export function terminalSafeJson(json: string): string {
  return json.replace(RAW_IN_JSON, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** True when `text` holds a character `scrubControl` removes (tests and checks). */
export function hasControl(text: string): boolean {
  return ANY_CONTROL.test(text);
}
