// Claude Code's project directory for a working directory, `<claude-dir>/projects/<name>/`, as its 2.1.328 executable makes it
// (`strings … | grep 'MTe=200'`): every UTF-16 unit outside [A-Za-z0-9] a "-"; past 200, cut and suffixed with a hash of the path. Pure.

export const MAX_PROJECT_DIR = 200;

/** Java's String.hashCode, a signed 32-bit integer. */
export function javaHash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = ((h << 5) - h + text.charCodeAt(i)) | 0;
  return h;
}

export function encodeProjectDir(cwd: string): string {
  const name = cwd.replace(/[^a-zA-Z0-9]/g, "-");
  return name.length <= MAX_PROJECT_DIR ? name : `${name.slice(0, MAX_PROJECT_DIR)}-${Math.abs(javaHash(cwd)).toString(36)}`;
}

/** The exact encoding, or for a long path the one existing directory sharing its 200-character prefix (another release hashed it differently). */
export function findProjectDir(cwd: string, existing: readonly string[]): string {
  const exact = encodeProjectDir(cwd);
  if (exact.length <= MAX_PROJECT_DIR || existing.includes(exact)) return exact;
  const similar = existing.filter((n) => n.startsWith(exact.slice(0, MAX_PROJECT_DIR + 1)));
  return similar.length === 1 ? similar[0] : exact;
}
