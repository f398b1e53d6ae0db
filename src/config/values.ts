/**
 * A setting's value checked (docs/DESIGN.md "Command line"): each parser returns the value or throws a
 * UsageError naming the setting, so a bad value is one line and exit status 2. Pure.
 */
import { join } from "node:path/posix";
import { UsageError } from "./usage-error.ts";

/** Parses a whole number in [min, max] or throws a UsageError naming the setting. */
export function integer(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw.trim())) throw new UsageError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new UsageError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** Parses on/off style booleans. */
export function onOff(name: string, raw: string, yes: string[], no: string[]): boolean {
  const v = raw.trim().toLowerCase();
  if (yes.includes(v)) return true;
  if (no.includes(v)) return false;
  throw new UsageError(`${name} must be ${yes[0]} or ${no[0]}, got "${raw}"`);
}

/** Validates the upstream: an http(s) URL without query or credentials; returns it without a trailing slash. */
export function upstreamUrl(raw: string): string {
  const url = httpUrl("upstream (--upstream / SESSIONTAP_UPSTREAM)", raw);
  if (url.username || url.password || url.search || url.hash) {
    throw new UsageError(`upstream (--upstream / SESSIONTAP_UPSTREAM) must not carry credentials, a query or a fragment`);
  }
  return url.origin + url.pathname.replace(/\/+$/, "");
}

/** Parses an http(s) URL or throws a UsageError naming the setting. */
export function httpUrl(name: string, raw: string): URL {
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    // reported below
  }
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) throw new UsageError(`${name} must be an http(s) URL, got "${raw}"`);
  return url;
}

/** Validates the store: a postgres:// or postgresql:// URL (never echoed back: it may hold a password). */
export function storeUrl(raw: string): string {
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    // reported below
  }
  if (url === null || (url.protocol !== "postgres:" && url.protocol !== "postgresql:")) {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(raw)?.[1];
    throw new UsageError(`store (--store / SESSIONTAP_STORE) must be a postgres:// or postgresql:// URL${scheme ? `, got a ${scheme}: URL` : ""}`);
  }
  return raw;
}

/** Validates `--since`: a calendar date YYYY-MM-DD, `today`, `yesterday`, or `Nd` (the last N days); returns it lower case. */
export function sinceDate(raw: string): string {
  const v = raw.trim().toLowerCase();
  if (v === "today" || v === "yesterday") return v;
  const days = /^(\d{1,5})d$/.exec(v);
  if (days !== null && Number(days[1]) >= 1) return v;
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (date !== null) {
    const d = new Date(Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3])));
    if (d.getUTCFullYear() === Number(date[1]) && d.getUTCMonth() === Number(date[2]) - 1 && d.getUTCDate() === Number(date[3])) return v;
  }
  throw new UsageError(`--since must be a date YYYY-MM-DD, today, yesterday or Nd (the last N days), got "${raw}"`);
}

/** Expands a leading "~" to the home directory, as a shell would. */
export function expandHome(path: string, home: string): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return path;
}
