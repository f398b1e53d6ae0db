/** The client's small helpers: elements, the API, times, counts (a part of the client: see main.ts). */
import type { GuardAlert, TokenCounts } from "../api-json.ts";
import type { Basics } from "./viewer-app.ts";

/** The helpers every other part uses. */
export function basicsPart(): Basics {
  function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string | null, text?: string | null): HTMLElementTagNameMap[K] {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  async function getJson<T>(url: string, init?: RequestInit): Promise<{ status: number; body: T }> {
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
  function timeEl(iso: string | null, seconds?: boolean): HTMLTimeElement {
    const t = el("time", null, iso ? local(iso, seconds) : "?");
    if (iso) {
      t.dateTime = iso;
      t.title = utc(iso);
    }
    return t;
  }
  function localize(root: Element): void {
    for (const t of root.querySelectorAll<HTMLElement>("time[datetime]")) {
      if (t.dataset.local) continue;
      t.dataset.local = "1";
      const iso = t.getAttribute("datetime");
      if (!iso) continue;
      t.textContent = local(iso, true);
      t.title = utc(iso);
    }
  }

  function idOf(s: { sessionId: string | null; dir: string }): string {
    return s.sessionId || s.dir;
  }
  function badge(state: string): HTMLElement {
    return el("span", "badge " + state, state === "intact" ? "Claude: intact" : "Claude: " + state);
  }
  const GUARD_WORDS: Record<string, string> = { missing: "is gone", stub: "is a stub", behind: "is behind the mirror" };
  function guardBanner(alert: GuardAlert): HTMLElement {
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

  function tokens(n: number): string {
    return n < 1000 ? String(n) : n < 1e6 ? (n / 1000).toFixed(n < 1e4 ? 2 : n < 1e5 ? 1 : 0) + "k" : (n / 1e6).toFixed(n < 1e7 ? 2 : 1) + "M";
  }
  function total(u: TokenCounts): number {
    return u ? u.inputTokens + u.outputTokens + u.cacheCreationTokens + u.cacheReadTokens : 0;
  }
  function usd(n: number | null | undefined): string {
    return n === null || n === undefined ? "?" : n === 0 ? "$0.00" : n >= 0.01 ? "$" + n.toFixed(2) : "$" + n.toPrecision(2);
  }
  function base(path: string | null): string {
    if (!path) return "cwd unknown";
    const p = path.replace(/\/+$/, "").split("/");
    return p[p.length - 1] || path;
  }

  return { el, getJson, timeEl, localize, idOf, badge, guardBanner, tokens, total, usd, base };
}
