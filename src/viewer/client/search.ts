/** Search across every session, within the list's filters, with the matches marked (a part of the client: see main.ts). */
import type { SearchHit, ViewerSession } from "../api-json.ts";
import type { Search, ViewerApp } from "./viewer-app.ts";
import { el, getJson, timeEl } from "./basics.ts";

/** The search part. It reaches the other parts through `app`. */
export function searchPart(app: ViewerApp): Search {
  const { state, ui } = app;

  /** The query's terms as the tap reads them: words, or "quoted phrases". */
  function termsOf(q: string): string[] {
    const out: string[] = [];
    for (const m of q.matchAll(/"([^"]+)"|(\S+)/g)) out.push(m[1] || m[2]);
    return out.filter(Boolean);
  }
  function escapeRe(t: string): string {
    return t.replace(/[.*+?^$(){}|[\]\\/]/g, "\\$&");
  }
  function highlight(root: Element, q: string): void {
    const terms = termsOf(q);
    if (terms.length === 0) return;
    const re = new RegExp(terms.map(escapeRe).join("|"), "giu");
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const nodes: Text[] = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n instanceof Text && !n.parentElement?.closest("mark")) nodes.push(n);
    for (const node of nodes) {
      const text = node.data;
      re.lastIndex = 0;
      if (!re.test(text)) continue;
      re.lastIndex = 0;
      const frag = document.createDocumentFragment();
      let at = 0;
      for (const m of text.matchAll(re)) {
        if (m[0] === "") continue;
        frag.append(text.slice(at, m.index), el("mark", null, m[0]));
        at = m.index + m[0].length;
      }
      frag.append(text.slice(at));
      node.replaceWith(frag);
    }
  }
  /** A snippet with its marks as <mark> elements (text nodes only). */
  function snippetEl(hit: SearchHit): HTMLElement {
    const d = el("div", "snippet");
    let at = 0;
    for (const [a, b] of hit.marks || []) {
      d.append(hit.snippet.slice(at, a), el("mark", null, hit.snippet.slice(a, b)));
      at = b;
    }
    d.append(hit.snippet.slice(at));
    return d;
  }
  function hitEl(h: SearchHit): HTMLLIElement {
    const li = el("li", "hit");
    const a = el("a");
    a.href = "#/s/" + encodeURIComponent(h.sessionId || h.dir) + "/" + encodeURIComponent(h.uuid);
    const meta = el("div", "meta");
    meta.append(document.createTextNode(h.role + " · "), timeEl(h.timestamp), document.createTextNode(" · " + (h.sessionId || h.dir).slice(0, 13)));
    if (h.offBranch) meta.append(document.createTextNode(" · "), el("span", "off-branch", "off the current branch (rewound or retried)"));
    a.append(el("div", "title", h.title || "(untitled)"), meta, snippetEl(h));
    li.append(a);
    return li;
  }

  /** "N messages in M sessions match", and how many the filters or the tap's limit of 100 left out. */
  function hitCount(hits: SearchHit[], found: number): string {
    const sessions = new Set(hits.map((h) => h.dir)).size;
    const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
    let text = `${plural(hits.length, "message")} in ${plural(sessions, "session")} match${hits.length === 1 ? "es" : ""}`;
    if (found > hits.length) text += ` (${found - hits.length} more outside the filters)`;
    if (found >= 100) text += "; the first 100 found are shown";
    return text;
  }

  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  function onSearch(): void {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 200);
  }
  async function runSearch(): Promise<void> {
    const q = ui.search.value.trim();
    state.query = q;
    const results = ui.results;
    if (q === "") {
      results.replaceChildren();
      results.hidden = true;
      ui.sessions.hidden = false;
      app.renderSessions(); // the line above the list says what the sessions cost again
      return;
    }
    const all = (await getJson<SearchHit[]>("api/search?q=" + encodeURIComponent(q))).body;
    if (ui.search.value.trim() !== q) return; // a newer query is on its way
    const bySession = new Map<string, ViewerSession>(state.sessions.map((s) => [s.dir, s]));
    const hits = all.filter((h) => {
      const s = bySession.get(h.dir);
      return !s || app.passes(s);
    });
    ui.sessions.hidden = true;
    results.hidden = false;
    ui.totals.textContent = hitCount(hits, all.length);
    if (hits.length === 0) {
      results.replaceChildren(el("li", "empty", all.length === 0 ? "Nothing matches." : "Nothing matches within the filters."));
      return;
    }
    results.replaceChildren(...hits.map(hitEl));
  }

  return { highlight, onSearch, runSearch };
}
