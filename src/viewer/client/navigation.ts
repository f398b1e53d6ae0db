/**
 * Moving around: the hash names what is shown (`#/s/<id>[/<uuid>]`, so links, reloads and the back button
 * work), a back button for narrow screens, and the keyboard (a part of the client: see main.ts).
 */
import type { Navigation, ViewerApp } from "./viewer-app.ts";
import { el, idOf } from "./basics.ts";

/** The navigation part. It reaches the other parts through `app`. */
export function navigationPart(app: ViewerApp): Navigation {
  const { state, ui } = app;

  function route(): void {
    const m = /^#\/s\/([^/]+)(?:\/(.+))?$/.exec(location.hash);
    if (m) {
      app.showSession(decodeURIComponent(m[1]), m[2] ? decodeURIComponent(m[2]) : null).catch((e) => {
        ui.conversation.replaceChildren(el("div", "empty", String((e instanceof Error && e.message) || e)));
      });
    } else {
      document.body.classList.remove("viewing");
      state.current = null;
      app.renderSessions();
    }
  }
  function go(id: string, uuid?: string): void {
    const hash = "#/s/" + encodeURIComponent(id) + (uuid ? "/" + encodeURIComponent(uuid) : "");
    if (location.hash === hash) route();
    else location.hash = hash;
  }
  function backToList(): void {
    if (location.hash) history.pushState(null, "", location.pathname + location.search);
    route();
    document.querySelector<HTMLElement>("#sessions li.active a, #sessions a")?.focus();
  }
  /** Opens the session `n` places from the current one in the list as filtered. */
  function step(n: number): void {
    if (state.shown.length === 0) return;
    const m = /^#\/s\/([^/]+)/.exec(location.hash);
    const current = m ? decodeURIComponent(m[1]) : state.current;
    const at = state.shown.findIndex((s) => idOf(s) === current || s.dir === current || (current && idOf(s).startsWith(current)));
    const next = at < 0 ? (n > 0 ? 0 : state.shown.length - 1) : Math.min(state.shown.length - 1, Math.max(0, at + n));
    const id = idOf(state.shown[next]);
    go(id);
    ui.sessions.querySelector<HTMLElement>('li[data-session="' + CSS.escape(id) + '"] a')?.focus({ preventScroll: false });
  }
  function onKey(e: KeyboardEvent): void {
    const typing = e.target instanceof HTMLElement && e.target.matches("input,select,textarea");
    if (e.key === "Escape") {
      if (e.target === ui.search && ui.search.value) {
        ui.search.value = "";
        app.runSearch();
        return;
      }
      if (document.body.classList.contains("viewing")) {
        e.preventDefault();
        backToList();
      }
      return;
    }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "j" || e.key === "ArrowDown") {
      e.preventDefault();
      step(1);
    } else if (e.key === "k" || e.key === "ArrowUp") {
      e.preventDefault();
      step(-1);
    } else if (e.key === "/") {
      e.preventDefault();
      ui.search.focus();
    }
  }

  return { route, backToList, onKey };
}
