// The side column: the session list, its filters and totals, and search across the sessions they let through: docs/DESIGN.md "The viewer".
import type { SearchHit, ViewerSession } from "../api.ts";
import { badge, base, el, failed, getJson, guardBanner, idOf, state, timeEl, tokens, total, ui, usd } from "./basics.ts";
import { loadHome } from "./home.ts";
import { termsPattern } from "../../transcript/search.ts";
import { plural } from "../../utils/describe-error.ts";
import { daysBefore, dayStart, LOCAL, localDate, sinceStart } from "../../utils/local-time.ts";

/** [from, to) in the reader's days, as `--since` counts them; null for any time. */
function range(): [number, number] | null {
  const when = ui.day.value || ui.when.value;
  if (!when) return null;
  const now = Date.now();
  const today = localDate(now, LOCAL);
  const end = ui.day.value ? daysBefore(when, -1) : when === "yesterday" ? today : daysBefore(today, -1);
  return [sinceStart(/^\d+$/.test(when) ? `${when}d` : when, now, LOCAL)!, dayStart(end, LOCAL)];
}

export function passes(s: ViewerSession): boolean {
  if (ui.project.value && s.cwd !== ui.project.value) return false;
  const r = range();
  if (!r) return true;
  const first = Date.parse(s.firstTimestamp || s.lastTimestamp || "");
  const last = Date.parse(s.lastTimestamp || s.firstTimestamp || "");
  return !isNaN(first) && first < r[1] && last >= r[0];
}

function renderProjects(): void {
  const chosen = ui.project.value;
  const counts = new Map<string, number>();
  for (const s of state.sessions) if (s.cwd) counts.set(s.cwd, (counts.get(s.cwd) || 0) + 1);
  const options = [...counts.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([cwd, n]) =>
    el("option", null, `${base(cwd)} (${n})`, { value: cwd, title: cwd })
  );
  ui.project.replaceChildren(el("option", null, "All projects", { value: "" }), ...options);
  ui.project.value = counts.has(chosen) ? chosen : "";
}

/** Says what the tap forwarded without mirroring ("12 requests to /v2/… forwarded, not mirrored"), from its health. */
async function loadUnseen(): Promise<void> {
  const mirror = (await getJson<{ mirror?: { notMirrored?: { shapes?: { said?: string }[] } } | string }>("health")).mirror;
  const lines = typeof mirror === "object" ? (mirror.notMirrored?.shapes || []).map((s) => s.said).filter((s) => typeof s === "string") : [];
  ui.unseen.replaceChildren(...lines.map((line) => el("p", null, line + ": not in the mirror")));
  ui.unseen.hidden = lines.length === 0;
}

export async function loadSessions(): Promise<void> {
  loadUnseen().catch(failed("reading the tap's health"));
  state.sessions = await getJson<ViewerSession[]>("api/sessions");
  renderProjects();
  renderSessions();
  if (!document.body.classList.contains("viewing")) await loadHome();
  const open = state.sessions.find((s) => idOf(s) === state.current);
  const heading = ui.facts.querySelector("h2");
  if (open && heading) {
    ui.facts.querySelector(".guard")?.remove();
    if (open.guard) heading.after(guardBanner(open.guard));
  }
}

function totals(shown: ViewerSession[]): string {
  let sum = 0, unknown = false, toks = 0;
  for (const s of shown) {
    toks += total(s.usage);
    if (s.costUSD !== null) sum += s.costUSD;
    else if (total(s.usage) > 0) unknown = true;
  }
  const cost = unknown ? (sum > 0 ? usd(sum) + " + ?" : "cost unknown") : "≈ " + usd(sum);
  return plural(shown.length, "session") + " · " + tokens(toks) + " tokens · " + cost;
}

function item(s: ViewerSession): HTMLLIElement {
  const li = el("li", "session" + (idOf(s) === state.current ? " active" : ""));
  li.dataset.session = idOf(s);
  const facts = " · " + usd(s.costUSD) + " · " + tokens(total(s.usage)) + " tokens · " + base(s.cwd);
  const meta = el("div", "meta", [timeEl(s.lastTimestamp), facts], { title: s.cwd || "" });
  const sid = el("div", "sid", [idOf(s).slice(0, 13), badge(s.claudeTranscript)]);
  const title = el("div", "title", s.title || "(no prompt)", { title: s.title || "" });
  li.append(el("a", null, [title, meta, sid], { href: "#/s/" + encodeURIComponent(idOf(s)) }), ...(s.guard ? [guardBanner(s.guard)] : []));
  return li;
}

export function renderSessions(): void {
  const list = ui.sessions;
  const hadFocus = list.contains(document.activeElement);
  state.shown = state.sessions.filter(passes);
  // While a search shows its hits, the line above says how many matched (runSearch), not what the list costs.
  if (!state.query) ui.totals.textContent = totals(state.shown);
  if (state.shown.length === 0) {
    list.replaceChildren(el("li", "empty", state.sessions.length === 0 ? "No mirrored sessions yet." : "No session matches the filters."));
    return;
  }
  list.replaceChildren(...state.shown.map(item));
  // Re-rendering replaces the links: keep the keyboard where it was.
  if (hadFocus) list.querySelector<HTMLElement>("li.active a")?.focus({ preventScroll: true });
}

export function highlight(root: Element, q: string): void {
  const re = termsPattern(q);
  if (re === null) return;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n instanceof Text && !n.parentElement?.closest("mark")) nodes.push(n);
  for (const node of nodes) {
    const spans = [...node.data.matchAll(re)].map((m): [number, number] => [m.index, m.index + m[0].length]);
    if (spans.length > 0) node.replaceWith(marked(node.data, spans));
  }
}

/** `text` with each [from, to) span in a <mark>. */
function marked(text: string, spans: [number, number][]): DocumentFragment {
  const frag = document.createDocumentFragment();
  let at = 0;
  for (const [from, to] of spans) {
    frag.append(text.slice(at, from), el("mark", null, text.slice(from, to)));
    at = to;
  }
  frag.append(text.slice(at));
  return frag;
}

function hitEl(h: SearchHit): HTMLLIElement {
  const meta = el("div", "meta", [h.role + " · ", timeEl(h.timestamp), " · " + (h.sessionId || h.dir).slice(0, 13)]);
  if (h.offBranch) meta.append(" · ", el("span", "off-branch", "off the current branch (rewound or retried)"));
  const snippet = el("div", "snippet", [marked(h.snippet, h.marks || [])]);
  const href = "#/s/" + encodeURIComponent(h.sessionId || h.dir) + "/" + encodeURIComponent(h.uuid);
  return el("li", "hit", [el("a", null, [el("div", "title", h.title || "(untitled)"), meta, snippet], { href })]);
}

/** "N messages in M sessions match", and how many the filters or the tap's limit of 100 left out. */
function hitCount(hits: SearchHit[], found: number): string {
  let text = `${plural(hits.length, "message")} in ${plural(new Set(hits.map((h) => h.dir)).size, "session")} match${hits.length === 1 ? "es" : ""}`;
  if (found > hits.length) text += ` (${found - hits.length} more outside the filters)`;
  if (found >= 100) text += "; the first 100 found are shown";
  return text;
}

let searchTimer: ReturnType<typeof setTimeout> | undefined;
export function onSearch(): void {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(runSearch, 200);
}

export async function runSearch(): Promise<void> {
  const q = ui.search.value.trim();
  state.query = q;
  if (q === "") {
    ui.results.replaceChildren();
    ui.results.hidden = true;
    ui.sessions.hidden = false;
    renderSessions(); // the line above the list says what the sessions cost again
    return;
  }
  const all = await getJson<SearchHit[]>("api/search?q=" + encodeURIComponent(q));
  if (ui.search.value.trim() !== q) return; // a newer query is on its way
  const bySession = new Map<string, ViewerSession>(state.sessions.map((s) => [s.dir, s]));
  const hits = all.filter((h) => !bySession.has(h.dir) || passes(bySession.get(h.dir)!));
  ui.sessions.hidden = true;
  ui.results.hidden = false;
  ui.totals.textContent = hitCount(hits, all.length);
  if (hits.length === 0) ui.results.replaceChildren(el("li", "empty", all.length === 0 ? "Nothing matches." : "Nothing matches within the filters."));
  else ui.results.replaceChildren(...hits.map(hitEl));
}
