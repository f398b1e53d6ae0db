// The browser client's entry, bundled into the page's one script (../page.ts): docs/DESIGN.md "The viewer".
import { el, failed, idOf, message, state, ui } from "./basics.ts";
import { loadHome } from "./home.ts";
import { loadSessions, onSearch, renderSessions, runSearch } from "./list.ts";
import { follow, showSession } from "./session.ts";

/** `#/s/<id>[/<uuid>]`: a session (and a record in it), else the home and the list. */
function route(): Promise<void> {
  const m = /^#\/s\/([^/]+)(?:\/(.+))?$/.exec(location.hash);
  if (m) {
    const fail = (e: unknown) => ui.conversation.replaceChildren(el("div", "empty", message(e)));
    showSession(decodeURIComponent(m[1]), m[2] ? decodeURIComponent(m[2]) : null).catch(fail);
    return Promise.resolve();
  }
  const wasViewing = document.body.classList.contains("viewing");
  document.body.classList.remove("viewing");
  state.dir = null; // the session left stays marked in the list
  follow(null);
  renderSessions();
  return wasViewing ? loadHome().catch(failed("reading the usage")) : Promise.resolve();
}

/** Focus on the list, kept in view once the home above it is drawn (which moves the list down). */
function backToList(): void {
  if (location.hash) history.pushState(null, "", location.pathname + location.search);
  const drawn = route();
  const link = ui.sessions.querySelector<HTMLElement>("li.active a") ?? ui.sessions.querySelector<HTMLElement>("a");
  link?.focus();
  void drawn.then(() => link?.scrollIntoView({ block: "nearest" }));
}

function step(n: number): void {
  if (state.shown.length === 0) return;
  const m = /^#\/s\/([^/]+)/.exec(location.hash);
  const current = m ? decodeURIComponent(m[1]) : state.current;
  const at = state.shown.findIndex((s) => idOf(s) === current || s.dir === current || (current && idOf(s).startsWith(current)));
  const next = at < 0 ? (n > 0 ? 0 : state.shown.length - 1) : Math.min(state.shown.length - 1, Math.max(0, at + n));
  const id = idOf(state.shown[next]);
  location.hash = "#/s/" + encodeURIComponent(id);
  ui.sessions.querySelector<HTMLElement>('li[data-session="' + CSS.escape(id) + '"] a')?.focus({ preventScroll: false });
}

function onKey(e: KeyboardEvent): void {
  const typing = e.target instanceof HTMLElement && e.target.matches("input,select,textarea");
  if (e.key === "Escape") {
    if (e.target === ui.search && ui.search.value) {
      ui.search.value = "";
      runSearch();
    } else if (document.body.classList.contains("viewing")) {
      e.preventDefault();
      backToList();
    }
    return;
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  const move = ({ j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 } as Record<string, number>)[e.key];
  if (move === undefined && e.key !== "/") return;
  e.preventDefault();
  if (move === undefined) ui.search.focus();
  else step(move);
}

document.addEventListener("keydown", onKey);
ui.back.addEventListener("click", backToList);
ui.search.addEventListener("input", onSearch);
for (const select of [ui.project, ui.when, ui.day]) {
  select.addEventListener("change", () => {
    if (select === ui.when) ui.day.value = ""; // a relative range replaces a chosen day
    renderSessions();
    if (state.query) runSearch();
  });
}
globalThis.addEventListener("hashchange", route);
loadSessions().then(route).catch((e) => ui.sessions.replaceChildren(el("li", "empty", message(e))));
// The guard's alerts change without new records: refresh the list (and the home) now and then.
setInterval(() => {
  if (!document.hidden) loadSessions().catch(failed("refreshing the list"));
}, 10000);
