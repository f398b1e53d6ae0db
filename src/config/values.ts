// A setting's value checked, or a UsageError naming the setting: one line, exit 2 (docs/DESIGN.md "Command line"). Pure.
import { join } from "node:path/posix";

export class UsageError extends Error {
  override name = "UsageError";
}

export type Env = Record<string, string | undefined>;

/** A setting: its flag first, then its environment variable (empty is unset). */
export function pick(flags: Map<string, string | true>, flag: string | null, env: Env, envName: string | null): string | undefined {
  const fromFlag = flag === null ? undefined : flags.get(flag);
  if (typeof fromFlag === "string") return fromFlag;
  const fromEnv = envName === null ? undefined : env[envName];
  return fromEnv === "" ? undefined : fromEnv;
}

export function integer(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw.trim())) throw new UsageError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new UsageError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

export function onOff(name: string, raw: string, yes: string[], no: string[]): boolean {
  const v = raw.trim().toLowerCase();
  if (yes.includes(v) || no.includes(v)) return yes.includes(v);
  throw new UsageError(`${name} must be ${yes[0]} or ${no[0]}, got "${raw}"`);
}

function urlOf(raw: string, protocols: string[]): URL | null {
  try {
    const url = new URL(raw);
    return protocols.includes(url.protocol) ? url : null;
  } catch {
    return null;
  }
}

export function httpUrl(name: string, raw: string): URL {
  const url = urlOf(raw, ["http:", "https:"]);
  if (url === null) throw new UsageError(`${name} must be an http(s) URL, got "${raw}"`);
  return url;
}

/** The upstream without a trailing slash; credentials, a query or a fragment would be sent on every request. */
export function upstreamUrl(raw: string): string {
  const url = httpUrl("upstream (--upstream / SESSIONTAP_UPSTREAM)", raw);
  if (url.username || url.password || url.search || url.hash) {
    throw new UsageError(`upstream (--upstream / SESSIONTAP_UPSTREAM) must not carry credentials, a query or a fragment`);
  }
  return url.origin + url.pathname.replace(/\/+$/, "");
}

/** A postgres:// URL, never echoed back: it may hold a password. */
export function storeUrl(raw: string): string {
  if (urlOf(raw, ["postgres:", "postgresql:"]) !== null) return raw;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(raw)?.[1];
  throw new UsageError(`store (--store / SESSIONTAP_STORE) must be a postgres:// or postgresql:// URL${scheme ? `, got a ${scheme}: URL` : ""}`);
}

/** `--since`: YYYY-MM-DD (a real date), today, yesterday or Nd, lower case. */
export function sinceDate(raw: string): string {
  const v = raw.trim().toLowerCase();
  const days = /^(\d{1,5})d$/.exec(v);
  if (v === "today" || v === "yesterday" || (days !== null && Number(days[1]) >= 1)) return v;
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (date !== null && new Date(Date.UTC(+date[1], +date[2] - 1, +date[3])).toISOString().startsWith(v)) return v;
  throw new UsageError(`--since must be a date YYYY-MM-DD, today, yesterday or Nd (the last N days), got "${raw}"`);
}

export function expandHome(path: string, home: string): string {
  return path === "~" ? home : path.startsWith("~/") ? join(home, path.slice(2)) : path;
}

/** The least estimated strength of a token (docs/RELIABILITY.md "Trust boundaries"): about 16 random hex characters'. */
export const WEAK_TOKEN_BITS = 56;

/**
 * A floor on a token's strength in bits: each character counts log2 of the alphabet the token spans, but a run
 * that repeats or steps by one (`aaaa`, `1234`) counts as its first character plus its length, and a repeated
 * block as the block plus the repeats — what a guesser tries first, so no length rule lets them through.
 */
export function tokenBits(token: string): number {
  const size = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^a-zA-Z0-9]/].reduce((n, re, i) => n + (re.test(token) ? [26, 26, 10, 33][i] : 0), 0);
  const perChar = Math.log2(Math.max(size, 2));
  const repeatsEvery = (p: number) => {
    for (let i = p; i < token.length; i++) if (token[i] !== token[i - p]) return false;
    return true;
  };
  let p = 1;
  while (p <= token.length / 2 && !repeatsEvery(p)) p++;
  const block = p <= token.length / 2 ? token.slice(0, p) : token;
  let bits = 0;
  let run = 1;
  let step = 0;
  for (let i = 1; i <= block.length; i++) {
    const d = i < block.length ? block.charCodeAt(i) - block.charCodeAt(i - 1) : Number.NaN;
    if (Math.abs(d) <= 1 && (run === 1 || d === step)) {
      step = d;
      run++;
    } else {
      bits += perChar + (run > 1 ? Math.log2(run) : 0);
      run = 1;
      step = 0;
    }
  }
  const repeats = token.length / block.length;
  return bits + (repeats > 1 ? Math.log2(repeats) : 0);
}

/** The token `/_tap/` requires, checked, never echoed back: it guards every conversation. */
export function tokenValue(token: string): string {
  const name = "token (--token / SESSIONTAP_TOKEN)";
  if (token.length < 16) throw new UsageError(`${name} must be at least 16 characters`);
  // What a bearer token may hold (RFC 6750 §2.1), which is what Hono's bearer-auth accepts.
  if (!/^[A-Za-z0-9._~+/-]+=*$/.test(token)) throw new UsageError(`${name} must be letters, digits and - . _ ~ + / only (a bearer token)`);
  if (tokenBits(token) < WEAK_TOKEN_BITS) {
    throw new UsageError(
      `${name} is too easy to guess (repeats, runs like 1234 or abcd, or too few kinds of characters); leave it out and one is generated, or make one with: openssl rand -base64 32`,
    );
  }
  return token;
}
