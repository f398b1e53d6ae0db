// deno-lint-ignore-file no-control-regex -- matching control characters is this module's whole purpose
/**
 * Terminal control characters out of text meant for people. A record can hold them (Claude Code keeps the
 * ANSI styling of a local command's output, `/compact`'s "Compacted" line among them); printed raw they
 * restyle or move a reader's terminal, and in Markdown or HTML they are invisible garbage. Pure.
 */

/** ANSI escape sequences: CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or `ESC \`), and two-character escapes. */
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;
/** C0 controls other than tab and newline, DEL, and the C1 controls. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
/** The same, to test for one. */
const ANY_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

/** `text` without escape sequences or control characters; `\r\n` and a lone `\r` become `\n`; tabs and newlines stay. */
export function scrubControl(text: string): string {
  if (!ANY_CONTROL.test(text)) return text;
  return text.replace(ANSI, "").replace(/\r\n?/g, "\n").replace(CONTROL, "");
}

/** `text` for one line of a table or a report (a cwd, a title): scrubbed, and every line break a space. */
export function scrubLine(text: string): string {
  return scrubControl(text).replace(/[ \t]*\n[ \t]*/g, " ");
}

/** True when `text` holds a character `scrubControl` removes (tests and checks). */
export function hasControl(text: string): boolean {
  return ANY_CONTROL.test(text);
}
