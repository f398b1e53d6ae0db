/**
 * The viewer page's browser client, entry: lists sessions (`api/sessions`) with their titles, projects,
 * tokens and costs, filtered by project and date; shows one (`api/sessions/:id`, conversation HTML rendered
 * and escaped by the server) with times in the reader's zone (UTC on hover) and each tool result inside its
 * call's pair; searches (`api/search?q=`) with the matches marked; restores a session into Claude Code (a
 * dry run first); moves between sessions from the keyboard; and follows `api/events` for new records.
 * Every string the client itself puts on the page goes through textContent. How it reaches the page:
 * main.ts.
 */
import type { ClientParts, ClientState, ClientUi, ViewerApp } from "./viewer-app.ts";
import { el } from "./basics.ts";

/** Starts the client on the page: finds its elements, assembles the parts, wires the events, loads the list. */
export function viewerClient(parts: ClientParts): void {
  function byId<T extends HTMLElement>(id: string, kind: { new (): T; prototype: T }): T {
    const found = document.getElementById(id);
    if (!(found instanceof kind)) throw new Error("the viewer page has no #" + id);
    return found;
  }
  const ui: ClientUi = {
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
  const state: ClientState = { sessions: [], shown: [], current: null, dir: null, tail: null, query: "" };
  // Every part's functions are added just below, before any of them runs: each part only calls another's
  // from an event or a promise, so the order here does not matter, and ViewerApp is exactly their union.
  const app = { state, ui } as ViewerApp;
  Object.assign(app, parts.list(app), parts.session(app), parts.restore(app), parts.search(app), parts.live(app), parts.navigation(app));

  document.addEventListener("keydown", app.onKey);
  ui.back.addEventListener("click", app.backToList);
  ui.search.addEventListener("input", app.onSearch);
  for (const select of [ui.project, ui.when, ui.day]) {
    select.addEventListener("change", () => {
      if (select === ui.when) ui.day.value = ""; // a relative range replaces a chosen day
      app.renderSessions();
      if (state.query) app.runSearch();
    });
  }
  globalThis.addEventListener("hashchange", app.route);
  app.loadSessions().then(app.route).catch((e) => ui.sessions.replaceChildren(el("li", "empty", String((e instanceof Error && e.message) || e))));
  app.listen();
  // The guard's alerts change without new records: refresh the list now and then.
  setInterval(() => {
    if (!document.hidden) app.loadSessions().catch(app.failed("refreshing the list"));
  }, 10000);
}
