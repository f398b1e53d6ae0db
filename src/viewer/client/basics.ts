/** The client's small helpers, imported by every part: elements, the API, times, counts. */
import type { GuardAlert, TokenCounts } from "../api-json.ts";

/** A new element with a class and text (textContent: nothing the client writes is parsed as HTML). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string | null, text?: string | null): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

/** GETs (or `init`s) a JSON answer; throws with the answer's error unless it is a refusal with a plan. */
export async function getJson<T>(url: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const r = await fetch(url, Object.assign({ headers: { accept: "application/json" } }, init || {}));
  const body: unknown = await r.json().catch(() => ({}));
  const field = (key: string): unknown => (typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined);
  // A refused restore is an answer to show (it carries the plan), not a failure.
  if (!r.ok && !field("outcome")) throw new Error(String(field("error") || "HTTP " + r.status));
  return { status: r.status, body: body as T }; // the shape api-json.ts names: the tap's own answer
}

const two = (n: number) => String(n).padStart(2, "0");
function local(iso: string, seconds?: boolean): string {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return "?";
  return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " + two(d.getHours()) + ":" + two(d.getMinutes()) +
    (seconds ? ":" + two(d.getSeconds()) : "");
}
function utc(iso: string | null): string {
  return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, " UTC") : "";
}
/** A <time> showing local time, UTC on hover. */
export function timeEl(iso: string | null, seconds?: boolean): HTMLTimeElement {
  const t = el("time", null, iso ? local(iso, seconds) : "?");
  if (iso) {
    t.dateTime = iso;
    t.title = utc(iso);
  }
  return t;
}
/** Rewrites the server's UTC <time> elements under `root` to the reader's zone, keeping UTC in the tooltip. */
export function localize(root: Element): void {
  for (const t of root.querySelectorAll<HTMLElement>("time[datetime]")) {
    if (t.dataset.local) continue;
    t.dataset.local = "1";
    const iso = t.getAttribute("datetime");
    if (!iso) continue;
    t.textContent = local(iso, true);
    t.title = utc(iso);
  }
}

/** The id a session goes by in the page: its session id, else its directory. */
export function idOf(s: { sessionId: string | null; dir: string }): string {
  return s.sessionId || s.dir;
}
/** The state of Claude Code's own transcript of a session, as a badge. */
export function badge(state: string): HTMLElement {
  return el("span", "badge " + state, state === "intact" ? "Claude: intact" : "Claude: " + state);
}
const GUARD_WORDS: Record<string, string> = { missing: "is gone", stub: "is a stub", behind: "is behind the mirror" };
/** The guard's alert on a session: Claude Code lost its transcript, and the command that brings it back. */
export function guardBanner(alert: GuardAlert): HTMLElement {
  const b = el("div", "guard");
  b.setAttribute("role", "alert");
  b.append(
    el("b", null, "Claude Code's transcript " + (GUARD_WORDS[alert.state] || alert.state) + " "),
    el("span", null, "(since "),
    timeEl(alert.since),
    el("span", null, "). Quit Claude Code, then run "),
    el("code", null, alert.command),
  );
  return b;
}

/** A token count: 950, 12.3k, 4.56M. */
export function tokens(n: number): string {
  return n < 1000 ? String(n) : n < 1e6 ? (n / 1000).toFixed(n < 1e4 ? 2 : n < 1e5 ? 1 : 0) + "k" : (n / 1e6).toFixed(n < 1e7 ? 2 : 1) + "M";
}
/** Every token of a usage. */
export function total(u: TokenCounts): number {
  return u ? u.inputTokens + u.outputTokens + u.cacheCreationTokens + u.cacheReadTokens : 0;
}
/** A cost in USD ("?" when unknown). */
export function usd(n: number | null | undefined): string {
  return n === null || n === undefined ? "?" : n === 0 ? "$0.00" : n >= 0.01 ? "$" + n.toFixed(2) : "$" + n.toPrecision(2);
}
/** The last part of a project path. */
export function base(path: string | null): string {
  if (!path) return "cwd unknown";
  const p = path.replace(/\/+$/, "").split("/");
  return p[p.length - 1] || path;
}
