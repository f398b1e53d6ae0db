/**
 * How hard a token is to guess (docs/RELIABILITY.md "Trust boundaries"): an estimate in bits, so that
 * `aaaaaaaaaaaaaaaa` and `1234567890123456`, which pass any length rule, are refused. Pure.
 *
 * Each character counts log2 of the alphabet its classes span (lower, upper, digits, symbols) — except
 * that a run of characters that repeat or step by one code point (`aaaa`, `1234`, `zyxw`) counts as its
 * first character plus the run's length, and a token that repeats a shorter block (`abcabcabc…`) counts as
 * that block plus the number of repeats. A guesser tries exactly those first; this is a floor on the work
 * they save, not a dictionary (a random token from `openssl rand -base64 32`, or the one serve generates,
 * is far above the bar).
 */

/** The least estimated strength a token must have: about a 16-character random hex string's, less its runs. */
export const WEAK_TOKEN_BITS = 56;

/** log2 of the alphabet the characters of `text` span. */
function alphabetBits(text: string): number {
  let size = 0;
  if (/[a-z]/.test(text)) size += 26;
  if (/[A-Z]/.test(text)) size += 26;
  if (/[0-9]/.test(text)) size += 10;
  if (/[^a-zA-Z0-9]/.test(text)) size += 33;
  return Math.log2(Math.max(size, 2));
}

/** The shortest block that `text` repeats (itself when it repeats none). */
function period(text: string): string {
  for (let p = 1; p <= text.length / 2; p++) {
    let repeats = true;
    for (let i = p; i < text.length && repeats; i++) repeats = text[i] === text[i - p];
    if (repeats) return text.slice(0, p);
  }
  return text;
}

/** The estimated strength of `token` in bits (see the module comment). */
export function tokenBits(token: string): number {
  const block = period(token);
  const repeats = token.length / block.length;
  const perChar = alphabetBits(token);
  let bits = 0;
  let run = 1;
  let step = 0;
  for (let i = 1; i <= block.length; i++) {
    const d = i < block.length ? block.charCodeAt(i) - block.charCodeAt(i - 1) : Number.NaN;
    if (i < block.length && Math.abs(d) <= 1 && (run === 1 || d === step)) {
      step = d;
      run++;
      continue;
    }
    // One run ends: its first character, and how long it was.
    bits += perChar + (run > 1 ? Math.log2(run) : 0);
    run = 1;
    step = 0;
  }
  return bits + (repeats > 1 ? Math.log2(repeats) : 0);
}
