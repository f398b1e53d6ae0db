/**
 * New records as the tap writes them (`api/events`): a record that continues the open conversation is
 * appended where it belongs; anything else (a rewind, a retry) changed the tree's shape, so the session is
 * fetched again (a part of the client: see main.ts).
 */
import type { LiveEvent } from "../api-json.ts";
import type { LiveRecords, ViewerApp } from "./viewer-app.ts";

/** The live part. It reaches the other parts through `app`. */
export function liveRecordsPart(app: ViewerApp): LiveRecords {
  const { state, ui } = app;

  let listTimer: ReturnType<typeof setTimeout> | undefined;
  /** New records change the list's times, tokens and costs: redraw it once a burst of them settles. */
  function refreshListSoon(): void {
    clearTimeout(listTimer);
    listTimer = setTimeout(() => app.loadSessions().catch(failed("refreshing the list")), 300);
  }

  function onRecords(batch: LiveEvent): void {
    refreshListSoon();
    if (batch.scope !== "main" || batch.dir !== state.dir) return;
    const main = ui.main;
    const nearBottom = main.scrollHeight - main.scrollTop - main.clientHeight < 80;
    let reload = false;
    for (const r of batch.records) {
      if (!r.uuid || document.getElementById("r-" + r.uuid)) continue;
      if (state.tail === null || r.parentUuid === state.tail) {
        const t = document.createElement("template");
        t.innerHTML = r.html; // rendered and escaped by the tap
        const node = t.content.firstElementChild;
        if (!(node instanceof HTMLElement)) {
          reload = true; // not one record's element: show the session as the tap renders it whole
          continue;
        }
        ui.conversation.append(node);
        app.settle(node);
        if (!node.hidden) app.flash(node);
        state.tail = r.uuid;
      } else reload = true; // a rewind or a retry: the tree changed shape
    }
    if (reload && state.current !== null) app.showSession(state.current).catch(failed("reloading the session"));
    else if (nearBottom) main.scrollTop = main.scrollHeight;
  }

  function failed(what: string): (error: unknown) => void {
    return (error) => {
      ui.live.textContent = "⚠ " + what + " failed: " + String((error instanceof Error && error.message) || error);
      ui.live.className = "problem";
      console.error("sessiontap viewer: " + what + " failed", error);
    };
  }

  function listen(): void {
    const live = ui.live;
    const source = new EventSource("api/events");
    source.addEventListener("ready", () => {
      live.textContent = "● live";
      live.className = "on";
    });
    source.addEventListener("records", (e) => onRecords(JSON.parse(e.data)));
    source.addEventListener("error", () => {
      live.textContent = "○ reconnecting";
      live.className = "";
    });
  }

  return { listen, failed };
}
