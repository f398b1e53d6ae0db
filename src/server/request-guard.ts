/**
 * Who may use the tap (docs/RELIABILITY.md "Trust boundaries"), decided from a request's headers alone.
 * Pure: app.ts applies these before anything is forwarded, mirrored or read.
 *
 * - Browsers: Claude Code never sends `Origin` or `Sec-Fetch-Site`. A request a web page made for another
 *   site or origin (`Sec-Fetch-Site: cross-site` or `same-site`, or an `Origin` that is not the address
 *   the request was sent to) is refused, so no page can post through the tap into the mirror or the API.
 *   The one exception is a person following a link to the viewer (a top-level GET navigation of `/_tap/`),
 *   which reads nothing by itself.
 * - A token: when the tap listens beyond loopback, every `/_tap/` route but the bare health status needs
 *   `Authorization: Bearer <token>` or the cookie the login link sets.
 */
import { createHash, timingSafeEqual } from "node:crypto";

/** The headers and place of a request that the guards read. */
export interface RequestFacts {
  method: string;
  path: string;
  host: string | null;
  origin: string | null;
  secFetchSite: string | null;
  secFetchMode: string | null;
  authorization: string | null;
  cookie: string | null;
}

/** The cookie the login link sets. */
export const ACCESS_COOKIE = "sessiontap_access";

/** The host name of a Host header, lower case, without its port ("[::1]:8787" → "[::1]"). */
export function hostName(host: string | null | undefined): string {
  const h = (host ?? "").trim().toLowerCase();
  if (h.startsWith("[")) return h.slice(0, h.indexOf("]") + 1);
  const colon = h.indexOf(":");
  return colon < 0 ? h : h.slice(0, colon);
}

/** True for a GET (or HEAD) a person made by following a link to the viewer. */
function viewerNavigation(facts: RequestFacts): boolean {
  return (facts.method === "GET" || facts.method === "HEAD") && facts.secFetchMode === "navigate" && facts.path.startsWith("/_tap/");
}

/** True when `origin` is the address the request was sent to, and one the tap answers as (`allowedHosts`; null: any). */
function ownOrigin(origin: string, host: string | null, allowedHosts: ReadonlySet<string> | null): boolean {
  if (host === null || !URL.canParse(origin)) return false;
  const url = new URL(origin);
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  const addressed = URL.canParse(`${url.protocol}//${host.trim()}`) ? new URL(`${url.protocol}//${host.trim()}`).host : null;
  if (addressed === null || url.host !== addressed) return false;
  return allowedHosts === null || allowedHosts.has(hostName(host));
}

/** Why a request a web page made must be refused (one line), or null when it may go on. */
export function crossSiteRefusal(facts: RequestFacts, allowedHosts: ReadonlySet<string> | null): string | null {
  const site = facts.secFetchSite?.trim().toLowerCase() ?? null;
  if ((site === "cross-site" || site === "same-site") && !viewerNavigation(facts)) {
    return "a web page of another site sent this request (Sec-Fetch-Site); the tap serves Claude Code and its own viewer only";
  }
  if (facts.origin !== null && !ownOrigin(facts.origin.trim(), facts.host, allowedHosts)) {
    return "a web page of another origin sent this request (Origin); the tap serves Claude Code and its own viewer only";
  }
  return null;
}

/** The cookie's value for `token`: derived, so the token itself never sits in a cookie jar. */
export function accessCookieValue(token: string): string {
  return createHash("sha256").update(`sessiontap access\u0000${token}`).digest("base64url");
}

/** Compares two strings in time that does not depend on where they differ. */
export function sameSecret(a: string, b: string): boolean {
  const x = createHash("sha256").update(a).digest();
  const y = createHash("sha256").update(b).digest();
  return timingSafeEqual(x, y) && a.length === b.length;
}

/** The value of cookie `name` in a Cookie header, or null. */
export function cookieOf(header: string | null, name: string): string | null {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** True when the request offers a token at all (a bearer token, or the login link's cookie): a try to count, right or wrong. */
export function offersToken(facts: RequestFacts): boolean {
  return /^Bearer\s+\S/i.test(facts.authorization ?? "") || cookieOf(facts.cookie, ACCESS_COOKIE) !== null;
}

/** True when the request carries `token`: as a bearer token, or as the login link's cookie. */
export function carriesToken(facts: RequestFacts, token: string): boolean {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(facts.authorization ?? "")?.[1];
  if (bearer !== undefined && sameSecret(bearer, token)) return true;
  const cookie = cookieOf(facts.cookie, ACCESS_COOKIE);
  return cookie !== null && sameSecret(cookie, accessCookieValue(token));
}

/** A fresh token: 32 random bytes, base64url. */
export function generateToken(): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
