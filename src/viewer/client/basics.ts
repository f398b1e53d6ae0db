// The browser client's state, the page's elements and small helpers: docs/DESIGN.md "The viewer".
import type { GuardAlert, ViewerSession } from "../api.ts";
import { TRANSCRIPT_IS } from "../../transcript/transcript-state.ts";
import { LOCAL, localDateTime } from "../../utils/local-time.ts";
export { tokensShort as tokens, totalTokens as total, usd } from "../../usage/tokens.ts";

export function byId<T extends Element>(id: string, kind: { new (): T; prototype: T }): T {
  const found = document.getElementById(id);
  if (!(found instanceof kind)) throw new Error("the viewer page has no #" + id);
  return found;
}

export const ui = {
  back: byId("back", HTMLButtonElement),
  live: byId("live", HTMLElement),
  search: byId("search", HTMLInputElement),
  project: byId("project", HTMLSelectElement),
  when: byId("when", HTMLSelectElement),
  day: byId("day", HTMLInputElement),
  totals: byId("totals", HTMLElement),
  unseen: byId("unseen", HTMLElement),
  sessions: byId("sessions", HTMLUListElement),
  results: byId("results", HTMLUListElement),
  main: byId("main", HTMLElement),
  facts: byId("facts", HTMLElement),
  conversation: byId("conversation", HTMLElement),
};

export const state = {
  sessions: [] as ViewerSession[],
  /** What the filters let through, in list order (what j/k move over). */
  shown: [] as ViewerSession[],
  /** The open session's id (its directory when it has none). */
  current: null as string | null,
  dir: null as string | null,
  /** The uuid the shown conversation ends at: a live record whose parent it is continues it. */
  tail: null as string | null,
  /** What the open session's files held when it was shown or last grew (compared when its event stream is ready). */
  bytes: 0,
  query: "",
  /** A session whose restore's dry run shows as soon as it opens (the home's "Restore…"). */
  planNext: null as string | null,
};

type Content = string | null | (Node | string)[];

/** Text goes in as text nodes: nothing the client writes is parsed as HTML. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string | null, content?: Content, props: Partial<HTMLElementTagNameMap[K]> = {}) {
  const e = Object.assign(document.createElement(tag), props);
  if (cls) e.className = cls;
  e.append(...[content ?? []].flat());
  return e;
}

export function message(error: unknown): string {
  return String((error instanceof Error && error.message) || error);
}

/** Throws with the answer's error unless it is a refused restore, which carries the plan to show. */
export async function getJson<T>(url: string, init?: RequestInit): Promise<T> {
  const r = await fetch(url, Object.assign({ headers: { accept: "application/json" } }, init || {}));
  const body: unknown = await r.json().catch(() => ({}));
  const field = (key: string): unknown => (typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined);
  if (!r.ok && !field("outcome")) throw new Error(String(field("error") || "HTTP " + r.status));
  return body as T;
}

export function liveSays(text: string, cls = ""): void {
  ui.live.textContent = text;
  ui.live.className = cls;
}

/** A background refresh that failed says so where the live state shows, never silently. */
export function failed(what: string): (error: unknown) => void {
  return (error) => {
    liveSays("⚠ " + what + " failed: " + message(error), "problem");
    console.error("sessiontap viewer: " + what + " failed", error);
  };
}

function setTime(t: HTMLElement, iso: string, seconds = false): void {
  t.textContent = isNaN(Date.parse(iso)) ? "?" : localDateTime(Date.parse(iso), LOCAL, seconds);
  t.title = iso.replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, " UTC");
  t.dataset.local = "1";
}

export function timeEl(iso: string | null, seconds?: boolean): HTMLTimeElement {
  const t = el("time", null, "?");
  if (iso) setTime(Object.assign(t, { dateTime: iso }), iso, seconds);
  return t;
}

export function localize(root: Element): void {
  for (const t of root.querySelectorAll<HTMLElement>("time[datetime]:not([data-local])")) setTime(t, t.getAttribute("datetime")!, true);
}

export function idOf(s: { sessionId: string | null; dir: string }): string {
  return s.sessionId || s.dir;
}

export function badge(state: string): HTMLElement {
  return el("span", "badge " + state, "Claude: " + state);
}

export function guardBanner(alert: GuardAlert): HTMLElement {
  const what = "Claude Code's transcript " + TRANSCRIPT_IS[alert.state] + " ";
  const b = el("div", "guard", [el("b", null, what), "(since ", timeEl(alert.since), "). Quit Claude Code, then run ", el("code", null, alert.command)]);
  b.setAttribute("role", "alert");
  return b;
}

export function base(path: string | null): string {
  if (!path) return "cwd unknown";
  const p = path.replace(/\/+$/, "").split("/");
  return p[p.length - 1] || path;
}
