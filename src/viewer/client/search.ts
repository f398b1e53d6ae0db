// Search across every session, within the list's filters, with the matches marked: docs/DESIGN.md "The viewer".
import type { SearchHit, ViewerSession } from "../api.ts";
import { el, getJson, state, timeEl, ui } from "./basics.ts";
import { passes, renderSessions } from "./list.ts";

/** The query's terms as the tap reads them: words, or "quoted phrases". */
function termsOf(q: string): string[] {
  return [...q.matchAll(/"([^"]+)"|(\S+)/g)].map((m) => m[1] || m[2]).filter(Boolean);
}

/** Wraps each match of the query's terms in the text under `root` in <mark>. */
export function highlight(root: Element, q: string): void {
  const terms = termsOf(q);
  if (terms.length === 0) return;
  const re = new RegExp(terms.map((t) => t.replace(/[.*+?^$(){}|[\]\\/]/g, "\\$&")).join("|"), "giu");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n instanceof Text && !n.parentElement?.closest("mark")) nodes.push(n);
  for (const node of nodes) {
    const text = node.data;
    re.lastIndex = 0;
    if (!re.test(text)) continue;
    re.lastIndex = 0; // matchAll starts where test() stopped
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

function hitEl(h: SearchHit): HTMLLIElement {
  const li = el("li", "hit");
  const a = el("a", null, null, { href: "#/s/" + encodeURIComponent(h.sessionId || h.dir) + "/" + encodeURIComponent(h.uuid) });
  const meta = el("div", "meta");
  meta.append(h.role + " · ", timeEl(h.timestamp), " · " + (h.sessionId || h.dir).slice(0, 13));
  if (h.offBranch) meta.append(" · ", el("span", "off-branch", "off the current branch (rewound or retried)"));
  const snippet = el("div", "snippet");
  let at = 0;
  for (const [from, to] of h.marks || []) {
    snippet.append(h.snippet.slice(at, from), el("mark", null, h.snippet.slice(from, to)));
    at = to;
  }
  snippet.append(h.snippet.slice(at));
  a.append(el("div", "title", h.title || "(untitled)"), meta, snippet);
  li.append(a);
  return li;
}

/** "N messages in M sessions match", and how many the filters or the tap's limit of 100 left out. */
function hitCount(hits: SearchHit[], found: number): string {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  let text = `${plural(hits.length, "message")} in ${plural(new Set(hits.map((h) => h.dir)).size, "session")} match${hits.length === 1 ? "es" : ""}`;
  if (found > hits.length) text += ` (${found - hits.length} more outside the filters)`;
  if (found >= 100) text += "; the first 100 found are shown";
  return text;
}

let searchTimer: ReturnType<typeof setTimeout> | undefined;
/** The search box changed: searches once typing pauses. */
export function onSearch(): void {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(runSearch, 200);
}

/** Runs the search in the box now and shows its hits (or the list again when the box is empty). */
export async function runSearch(): Promise<void> {
  const q = ui.search.value.trim();
  state.query = q;
  const results = ui.results;
  if (q === "") {
    results.replaceChildren();
    results.hidden = true;
    ui.sessions.hidden = false;
    renderSessions(); // the line above the list says what the sessions cost again
    return;
  }
  const all = await getJson<SearchHit[]>("api/search?q=" + encodeURIComponent(q));
  if (ui.search.value.trim() !== q) return; // a newer query is on its way
  const bySession = new Map<string, ViewerSession>(state.sessions.map((s) => [s.dir, s]));
  const hits = all.filter((h) => !bySession.has(h.dir) || passes(bySession.get(h.dir)!));
  ui.sessions.hidden = true;
  results.hidden = false;
  ui.totals.textContent = hitCount(hits, all.length);
  if (hits.length === 0) results.replaceChildren(el("li", "empty", all.length === 0 ? "Nothing matches." : "Nothing matches within the filters."));
  else results.replaceChildren(...hits.map(hitEl));
}
