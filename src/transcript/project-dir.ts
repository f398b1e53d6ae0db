/**
 * Claude Code's project directory names: where `<claude-dir>/projects/<name>/<session>.jsonl` lives for a
 * working directory. Pure.
 *
 * Read from the Claude Code 2.1.328 executable (`strings node_modules/.bin/claude | grep 'MTe=200'`):
 *
 *     var MTe=200;
 *     function ge(e){return Math.abs(vte(e)).toString(36)}
 *     function w(e){return e.replace(/[^a-zA-Z0-9]/g,"-")}
 *     function rL(e){let n=w(e);if(n.length<=MTe)return n;return`${n.slice(0,MTe)}-${ge(e)}`}
 *     function vte(t){let e=0;for(let n=0;n<t.length;n++)e=(e<<5)-e+t.charCodeAt(n)|0;return e}
 *
 * Every UTF-16 code unit outside [A-Za-z0-9] becomes "-" (so "/a.b_c" → "-a-b-c", and a non-BMP
 * character becomes "--"). A name longer than 200 characters is cut to 200 and followed by "-" and the
 * base-36 absolute value of a 32-bit Java-style string hash (h = h*31 + code unit) of the original,
 * unencoded path. Claude Code looks a long name up by its 200-character prefix as well (its hash changed
 * between releases), so `findProjectDir` accepts an existing directory that shares the prefix.
 */

/** Longest encoded name Claude Code keeps whole. */
export const MAX_PROJECT_DIR = 200;

/** Java's String.hashCode over UTF-16 code units, as a signed 32-bit integer. */
export function javaHash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = ((h << 5) - h + text.charCodeAt(i)) | 0;
  return h;
}

/**
 * Claude Code's directory name under `projects/` for the working directory `cwd`: every character but
 * ASCII letters and digits becomes `-`; a name past the limit is cut and suffixed with a hash of `cwd`.
 *
 * @example encodeProjectDir("/home/me/my.app") // → "-home-me-my-app"
 */
export function encodeProjectDir(cwd: string): string {
  const name = cwd.replace(/[^a-zA-Z0-9]/g, "-");
  if (name.length <= MAX_PROJECT_DIR) return name;
  return `${name.slice(0, MAX_PROJECT_DIR)}-${Math.abs(javaHash(cwd)).toString(36)}`;
}

/**
 * The directory to use among `existing` names: the exact encoding when present; for a long path, the one
 * existing directory that shares its 200-character prefix (a name another Claude Code release hashed
 * differently); else the exact encoding.
 */
export function findProjectDir(cwd: string, existing: readonly string[]): string {
  const exact = encodeProjectDir(cwd);
  if (exact.length <= MAX_PROJECT_DIR || existing.includes(exact)) return exact;
  const prefix = exact.slice(0, MAX_PROJECT_DIR + 1);
  const similar = existing.filter((n) => n.startsWith(prefix));
  return similar.length === 1 ? similar[0] : exact;
}
